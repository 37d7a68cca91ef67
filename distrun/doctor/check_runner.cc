#include "distrun/doctor/check_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

namespace distrun::doctor {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kHungFix =
    "a file system or driver on this node hangs: look at `ps -eo pid,stat,wchan,cmd` on it, "
    "or leave the check out with --checks";
constexpr const char* kThrewFix =
    "the check could not do its work on this node: if it persists, leave it out with --checks "
    "and report it";

// How long past ctx->limit() the runner waits before it abandons a check. A
// check that runs a program gives it the same limit (runToolWithin), and at
// the limit kills the program's process group and reaps it (within 2 s):
// the grace lets that happen first, so that the program never outlives the
// doctor. Only a check stuck in the kernel is abandoned.
constexpr std::chrono::seconds kOwnLimitGrace{3};

// What the runner and the check threads share. Held by shared_ptr: a
// thread abandoned at the limit still writes its result here later.
struct Board {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::optional<CheckResult>> results;
};

double secondsOf(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

CheckResult guarded(const Check& check, const ProbeContext& ctx) {
  try {
    return check.run(ctx);
  } catch (const std::exception& e) {
    return fail(check.name, e.what(), kThrewFix);
  } catch (...) {
    return fail(check.name, "the check ended with an exception that is not an error", kThrewFix);
  }
}

CheckResult timed(const Check& check, const ProbeContext& ctx) {
  const Clock::time_point start = Clock::now();
  CheckResult result = guarded(check, ctx);
  result.check = check.name;
  result.seconds = secondsOf(Clock::now() - start);
  return result;
}

CheckResult hung(const Check& check, std::chrono::milliseconds limit) {
  const double seconds = secondsOf(limit);
  CheckResult result =
      fail(check.name, fmt::format("did not finish within {:g} s", seconds), kHungFix);
  result.seconds = seconds;
  return result;
}

void post(Board& board, size_t index, CheckResult result) {
  std::lock_guard<std::mutex> lock(board.mutex);
  board.results[index] = std::move(result);
  board.changed.notify_all();
}

// Starts `check` on a thread of its own that posts its result to `board`.
// A thread that cannot be made is posted as the check's failure.
std::optional<std::thread> start(const Check& check, size_t index, std::shared_ptr<Board> board,
                                 std::shared_ptr<const ProbeContext> ctx) {
  try {
    return std::thread([check, index, board, ctx] { post(*board, index, timed(check, *ctx)); });
  } catch (const std::system_error& e) {
    post(*board, index, fail(check.name, fmt::format("no thread to run it: {}", e.what()), ""));
    return std::nullopt;
  }
}

// Runs `group` at once, each on its own thread, until all have ended or
// ctx->limit() and the grace have passed; the checks still running then are
// reported as hung and their threads left to end (or not) on their own.
std::vector<CheckResult> runGroup(const std::vector<Check>& group,
                                  const std::shared_ptr<const ProbeContext>& ctx) {
  auto board = std::make_shared<Board>();
  board->results.resize(group.size());
  const Clock::time_point deadline = Clock::now() + ctx->limit() + kOwnLimitGrace;
  std::vector<std::optional<std::thread>> threads;
  for (size_t i = 0; i < group.size(); ++i) threads.push_back(start(group[i], i, board, ctx));
  std::vector<std::optional<CheckResult>> results;
  {
    std::unique_lock<std::mutex> lock(board->mutex);
    board->changed.wait_until(lock, deadline, [&] {
      return std::all_of(board->results.begin(), board->results.end(),
                         [](const auto& r) { return r.has_value(); });
    });
    results = board->results;
  }
  std::vector<CheckResult> out;
  for (size_t i = 0; i < group.size(); ++i) {
    if (threads[i] && results[i]) threads[i]->join();
    if (threads[i] && !results[i]) threads[i]->detach();
    out.push_back(results[i] ? std::move(*results[i]) : hung(group[i], ctx->limit()));
  }
  return out;
}

std::vector<Check> selected(const std::vector<Check>& checks, const DoctorOptions& options) {
  if (options.checks.empty()) return checks;
  const std::set<std::string> names(options.checks.begin(), options.checks.end());
  std::vector<Check> chosen;
  std::copy_if(checks.begin(), checks.end(), std::back_inserter(chosen),
               [&](const Check& check) { return names.count(check.name) > 0; });
  return chosen;
}

}  // namespace

std::vector<CheckResult> runChecks(const std::vector<Check>& checks,
                                   std::shared_ptr<const ProbeContext> ctx) {
  const std::vector<Check> chosen = selected(checks, ctx->options);
  std::vector<Check> together;
  std::vector<size_t> togetherAt;  // where each of `together` sits in `chosen`
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (chosen[i].runsAlone) continue;
    together.push_back(chosen[i]);
    togetherAt.push_back(i);
  }
  std::vector<CheckResult> results(chosen.size());
  std::vector<CheckResult> found = runGroup(together, ctx);
  for (size_t j = 0; j < found.size(); ++j) results[togetherAt[j]] = std::move(found[j]);
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (chosen[i].runsAlone) results[i] = runGroup({chosen[i]}, ctx).front();
  }
  return results;
}

}  // namespace distrun::doctor
