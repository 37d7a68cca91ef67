#pragma once

// What the Supervisor's tests read from the actions it returns: one home
// for the helpers its test files share.

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "distrun/launch/supervisor.h"

namespace distrun::launch::supervisor_testing {

// The store port the tests' configs name.
inline constexpr int kPort = 29400;

// The pid the tests give the worker of `rank`.
inline int pidOf(int rank) { return 1000 + rank; }

// The record of rank `rank`'s exit: it ran as local rank `localRank` on node
// `nodeRank` ("node<N>"); a failed one leaves `tail` as its last stderr lines.
inline WorkerFailure exitOf(int rank, int localRank, int code, int signal = 0, int nodeRank = 0,
                            std::vector<std::string> tail = {"boom"}) {
  WorkerFailure f;
  f.rank = rank;
  f.localRank = localRank;
  f.nodeRank = nodeRank;
  f.host = "node" + std::to_string(nodeRank);
  f.pid = pidOf(rank);
  f.exitCode = code;
  f.signal = signal;
  f.time = "2026-01-02T03:04:05Z";
  if (code != 0 || signal != 0) f.stderrTail = std::move(tail);
  return f;
}

// One line per action (describe()), in order.
inline std::vector<std::string> names(const Actions& actions) {
  std::vector<std::string> out;
  for (const Action& a : actions) out.push_back(describe(a));
  return out;
}

// The text of the Print actions, in order.
inline std::string printed(const Actions& actions) {
  std::string text;
  for (const Action& a : actions) {
    if (const auto* p = std::get_if<Print>(&a)) text += p->text;
  }
  return text;
}

// The events the PublishEvent actions publish, in order.
inline std::vector<JobEvent> publishedEvents(const Actions& actions) {
  std::vector<JobEvent> events;
  for (const Action& a : actions) {
    if (const auto* p = std::get_if<PublishEvent>(&a)) events.push_back(p->event);
  }
  return events;
}

}  // namespace distrun::launch::supervisor_testing
