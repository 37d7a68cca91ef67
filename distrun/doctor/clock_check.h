#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "distrun/doctor/check_result.h"

namespace distrun::rdzv {
class Store;
}  // namespace distrun::rdzv

namespace distrun::doctor {

// One exchange of wall clocks between a node and rank 0's node, as NTP
// makes it: the node's clock when it asked and when the answer came, and
// rank 0's clock in between. Milliseconds since the Unix epoch.
struct ClockSample {
  double askedMs = 0;
  double masterMs = 0;
  double answeredMs = 0;
  // The node's clock minus rank 0's, assuming the answer took as long to
  // come as the question to go; off by at most uncertaintyMs.
  double skewMs() const { return (askedMs + answeredMs) / 2 - masterMs; }
  double uncertaintyMs() const { return (answeredMs - askedMs) / 2; }
};

// Clocks further apart than the uncertainty plus these are a warning
// (traces and logs of the nodes stop lining up) and a failure (Slurm's and
// munge's credentials, and any timeout logic across nodes, go wrong).
inline constexpr double kClockWarnMs = 50;
inline constexpr double kClockFailMs = 1000;

// The "clock" result of a node whose sample is `sample` (nullopt: rank 0
// did not answer in time), against rank 0's node `masterNode`.
CheckResult judgeClock(const std::optional<ClockSample>& sample, const std::string& masterNode);

// This machine's wall clock (CLOCK_REALTIME), ms since the epoch.
double wallClockMs();

// The node's side: writes its clock under clockAskKey(nodeRank), waits up
// to `wait` for rank 0's under clockAnswerKey(nodeRank).
std::optional<ClockSample> askClock(rdzv::Store& store, int nodeRank,
                                    std::chrono::milliseconds wait);

// Rank 0's side: answers nodes 1 .. numNodes-1, each as soon as it asked
// (it polls every node still waiting, so one node that never asks delays
// no other), until `deadline`; a node that has not asked by then gets no
// answer. Runs on a thread of its own with a client of its own.
void answerClocks(rdzv::Store& store, int numNodes, std::chrono::steady_clock::time_point deadline);

}  // namespace distrun::doctor
