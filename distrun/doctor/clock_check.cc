#include "distrun/doctor/clock_check.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "distrun/doctor/checks.h"
#include "distrun/doctor/meeting.h"
#include "distrun/rdzv/store_client.h"

namespace distrun::doctor {

namespace {

constexpr const char* kClock = "clock";

std::string clockFix() {
  return "the node's time service (chronyd, ntpd) is not keeping its clock: ask the admins "
         "(chronyc tracking shows the offset)";
}

CheckResult withFigures(CheckResult r, const ClockSample& s) {
  r.values["skew_ms"] = s.skewMs();
  r.values["uncertainty_ms"] = s.uncertaintyMs();
  return r;
}

}  // namespace

CheckResult judgeClock(const std::optional<ClockSample>& sample, const std::string& masterNode) {
  if (!sample) {
    return warn(kClock, "rank 0's node " + masterNode + " did not answer the clock exchange",
                "see rank 0's output: its node may be overloaded");
  }
  const double beyond = std::abs(sample->skewMs()) - sample->uncertaintyMs();
  const std::string detail = fmt::format("{:+.1f} ms against {} (+/- {:.1f} ms)", sample->skewMs(),
                                         masterNode, sample->uncertaintyMs());
  if (beyond > kClockFailMs) {
    return withFigures(
        fail(kClock, detail + fmt::format("; over {:.0f} ms", kClockFailMs), clockFix()), *sample);
  }
  if (beyond > kClockWarnMs) {
    return withFigures(
        warn(kClock, detail + fmt::format("; over {:.0f} ms", kClockWarnMs), clockFix()), *sample);
  }
  return withFigures(ok(kClock, detail), *sample);
}

double wallClockMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

std::optional<ClockSample> askClock(rdzv::Store& store, int nodeRank,
                                    std::chrono::milliseconds wait) {
  ClockSample s;
  s.askedMs = wallClockMs();
  store.set(clockAskKey(nodeRank), fmt::format("{:.3f}", s.askedMs));
  std::optional<std::string> answer = store.get(clockAnswerKey(nodeRank), wait);
  s.answeredMs = wallClockMs();
  if (!answer) return std::nullopt;
  s.masterMs = std::stod(*answer);
  return s;
}

void answerClocks(rdzv::Store& store, int numNodes,
                  std::chrono::steady_clock::time_point deadline) {
  std::vector<int> waiting;
  for (int node = 1; node < numNodes; ++node) waiting.push_back(node);
  while (!waiting.empty() && std::chrono::steady_clock::now() < deadline) {
    const size_t before = waiting.size();
    std::erase_if(waiting, [&](int node) {
      if (!store.tryGet(clockAskKey(node))) return false;
      store.set(clockAnswerKey(node), fmt::format("{:.3f}", wallClockMs()));
      return true;
    });
    if (waiting.size() == before) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace distrun::doctor
