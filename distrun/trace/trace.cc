#include "distrun/trace/trace.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "distrun/common/system.h"
#include "distrun/trace/clock.h"
#include "distrun/trace/config.h"
#include "distrun/trace/recorder.h"

namespace distrun::trace {

namespace detail {
std::atomic<bool> recording{false};
}  // namespace detail

namespace {

// The process's recording. Never freed while the process runs: spans may
// end in static destructors after exit began (closeAtExit).
struct ProcessTrace {
  TraceConfig config;
  std::unique_ptr<Recorder> recorder;
};

std::mutex startMutex;
std::atomic<ProcessTrace*> current{nullptr};
std::exception_ptr startError;
std::atomic<double> skewUs{0};
std::atomic<bool> inWindow{true};
std::atomic<int64_t> stepNow{0};
thread_local const Args* note = nullptr;

void updateRecording() {
  const ProcessTrace* t = current.load();
  detail::recording.store(t != nullptr && inWindow.load() && !t->recorder->stopped());
}

void write(const std::string& line) {
  ProcessTrace* t = current.load();
  if (t != nullptr && !t->recorder->write(line)) updateRecording();
}

void closeAtExit() {
  if (ProcessTrace* t = current.load()) t->recorder->close();
}

int intFrom(const Environment& env, const char* name, int fallback) {
  const std::optional<std::string> text = env.get(name);
  int value = 0;
  if (!text) return fallback;
  auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  return error == std::errc() && end == text->data() + text->size() ? value : fallback;
}

// The standalone rules of docs/environment.md where a variable is unset.
Header headerOf(const Environment& env, int rank, int worldSize) {
  Header h;
  h.rank = rank;
  h.worldSize = worldSize;
  h.localRank = intFrom(env, "LOCAL_RANK", rank);
  h.nodeRank = intFrom(env, "GROUP_RANK", 0);
  h.host = readHostFacts().hostname;
  h.pid = static_cast<long>(::getpid());
  h.restart = intFrom(env, "TORCHELASTIC_RESTART_COUNT", 0);
  h.monotonicUs = now();
  h.realtimeUs = realtimeUs() + skewUs.load();
  return h;
}

bool start(const Environment& env, int rank, int worldSize) {
  TraceConfig config = readTraceConfig(env);
  if (!config.on()) return false;
  prepareFolder(config.folder, kFolderName);
  skewUs.store(config.skewOf(rank));
  RecorderOptions options{.path = fmt::format("{}/rank{}.jsonl", config.folder, rank),
                          .maxBytes = config.maxBytes};
  auto t = std::make_unique<ProcessTrace>();
  t->recorder =
      std::make_unique<Recorder>(std::move(options), headerOf(env, rank, worldSize), std::cerr);
  t->config = std::move(config);
  inWindow.store(!t->config.window);
  current.store(t.release());
  updateRecording();
  static const bool registered = std::atexit(closeAtExit) == 0;
  (void)registered;
  return true;
}

}  // namespace

namespace detail {

void writeSpan(const char* name, const char* category, Thread thread, double startUs,
               const Args& args) {
  if (current.load() == nullptr) return;
  write(spanLine(name, category, thread, startUs, now() - startUs, args));
}

}  // namespace detail

double now() { return monotonicUs() + skewUs.load(std::memory_order_relaxed); }

void instant(const char* name, const char* category, Thread thread, const Args& args) {
  if (!enabled()) return;
  write(instantLine(name, category, thread, now(), args));
}

void setStep(int64_t step) {
  stepNow.store(step, std::memory_order_relaxed);
  const ProcessTrace* t = current.load();
  if (t == nullptr || !t->config.window) return;
  inWindow.store(t->config.window->contains(step));
  updateRecording();
}

void endStep(int64_t step) {
  const ProcessTrace* t = current.load();
  if (t == nullptr || !t->config.window || step < t->config.window->last) return;
  inWindow.store(false);
  updateRecording();
}

int64_t currentStep() { return stepNow.load(std::memory_order_relaxed); }

StepSpan::StepSpan(int64_t epoch, int64_t step, int64_t globalStep)
    : globalStep_((setStep(globalStep), globalStep)), span_("step") {
  span_.arg("epoch", epoch).arg("step", step).arg("global_step", globalStep);
}

StepSpan::~StepSpan() {
  span_.end();
  endStep(globalStep_);
}

CollectiveNote::CollectiveNote(const Args& args) : previous_(note) { note = &args; }
CollectiveNote::~CollectiveNote() { note = previous_; }
const Args* CollectiveNote::current() { return note; }

bool startProcess(const Environment& env, int rank, int worldSize) {
  std::lock_guard lock(startMutex);
  if (startError) std::rethrow_exception(startError);
  if (current.load() != nullptr) return false;
  try {
    return start(env, rank, worldSize);
  } catch (...) {
    startError = std::current_exception();
    throw;
  }
}

bool started() { return current.load() != nullptr; }

void writeClockOffset(double offsetUs, double rttUs) { write(clockOffsetLine(offsetUs, rttUs)); }

void flush() {
  if (ProcessTrace* t = current.load()) t->recorder->flush();
}

void stopForTesting() {
  std::lock_guard lock(startMutex);
  detail::recording.store(false);
  delete current.exchange(nullptr);
  startError = nullptr;
  skewUs.store(0);
  inWindow.store(true);
  stepNow.store(0);
}

}  // namespace distrun::trace
