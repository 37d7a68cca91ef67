#pragma once

// This process's trace (docs/observability.md, "Recording a trace"): the
// recording a worker makes of its steps, forward, backward, gradient
// buckets and collectives into DISTRUN_TRACE/rank<R>.jsonl.
//
// It starts when the process connects its first communicator
// (comm::connect calls startProcess, then measures the clock offset to
// rank 0); before that, and whenever DISTRUN_TRACE is unset, enabled() is
// false and every call here returns at once: a Span is one relaxed load
// and a branch, and no argument is built.
//
// With a step window (DISTRUN_TRACE_STEPS=A:B) events are recorded from
// the start of global step A (setStep) to the end of step B (endStep); the
// setup before A and whatever follows B (evaluation, the final snapshot)
// are not. The header and the clock offset are always written.
//
// Thread-safe: events may be recorded from any thread.
#include <atomic>
#include <cstdint>
#include <string_view>

#include "distrun/common/environment.h"
#include "distrun/trace/args.h"
#include "distrun/trace/event.h"

namespace distrun::trace {

namespace detail {
extern std::atomic<bool> recording;  // started, inside the window, not capped
void writeSpan(const char* name, const char* category, Thread thread, double startUs,
               const Args& args);
}  // namespace detail

// Whether events are recorded now.
inline bool enabled() { return detail::recording.load(std::memory_order_relaxed); }

// This process's trace clock in microseconds: CLOCK_MONOTONIC plus its
// test skew (DISTRUN_TRACE_CLOCK_SKEW_US; the header's real-time reading
// gets it too, as if this host's clocks were both off by it).
double now();

// A span from construction to end() (or destruction), recorded when
// tracing was enabled at construction. arg() adds to its args only then.
class Span {
 public:
  explicit Span(const char* name, const char* category = "train", Thread thread = Thread::kCompute)
      : name_(name), category_(category), thread_(thread), startUs_(enabled() ? now() : -1) {}
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  bool active() const { return startUs_ >= 0; }
  template <class V>
  Span& arg(std::string_view key, V value) {
    if (active()) args_.add(key, value);
    return *this;
  }
  Span& args(const Args& more) {
    if (active()) args_.merge(more);
    return *this;
  }
  // Records the span now (once).
  void end() {
    if (!active()) return;
    detail::writeSpan(name_, category_, thread_, startUs_, args_);
    startUs_ = -1;
  }

 private:
  const char* name_;
  const char* category_;
  Thread thread_;
  double startUs_;
  Args args_;
};

// An instant event; build `args` only when enabled().
void instant(const char* name, const char* category, Thread thread, const Args& args = {});

// Global training step `step` (from 1) starts: the window opens when it
// holds the step. endStep: the step ended; the window closes after its last.
void setStep(int64_t step);
void endStep(int64_t step);
// The last step setStep was given (0 before the first).
int64_t currentStep();

// One training step's span "step" (args epoch, step, global_step) with
// setStep before it and endStep after it.
class StepSpan {
 public:
  StepSpan(int64_t epoch, int64_t step, int64_t globalStep);
  ~StepSpan();
  StepSpan(const StepSpan&) = delete;
  StepSpan& operator=(const StepSpan&) = delete;

 private:
  int64_t globalStep_;
  Span span_;
};

// Args that the next collective issued on this thread adds to its span
// while this object lives (DDP names the bucket an all-reduce carries).
class CollectiveNote {
 public:
  explicit CollectiveNote(const Args& args);
  ~CollectiveNote();
  CollectiveNote(const CollectiveNote&) = delete;
  CollectiveNote& operator=(const CollectiveNote&) = delete;
  // The innermost live note of this thread, or nullptr.
  static const Args* current();

 private:
  const Args* previous_;
};

// Starts this process's recording from `env` (readTraceConfig) as global
// rank `rank` of `worldSize`, the first time it is called: creates
// DISTRUN_TRACE/rank<R>.jsonl (appending) and writes its header, with
// LOCAL_RANK, GROUP_RANK and TORCHELASTIC_RESTART_COUNT from `env`.
// Returns true only for the call that started it; false when DISTRUN_TRACE
// is unset or it had started before. Throws UsageError (64) for a
// malformed DISTRUN_TRACE* value, IoError (74) naming DISTRUN_TRACE
// (--trace) when the folder or file cannot be made; a later call then
// throws the same error again.
bool startProcess(const Environment& env, int rank, int worldSize);
// Whether this process records (inside its window or not).
bool started();
// Writes the clock_offset line (rank 0's clock = this one's + offsetUs).
void writeClockOffset(double offsetUs, double rttUs);
// Writes what is buffered (also done every 500 ms and at exit).
void flush();
// Tests: stops the recording (flushing it) so that startProcess starts
// anew. Not thread-safe against concurrent recording.
void stopForTesting();

}  // namespace distrun::trace
