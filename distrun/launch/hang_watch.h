#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/clock.h"
#include "distrun/launch/failure_report.h"
#include "distrun/launch/progress_probe.h"

namespace distrun::launch {

// How long the agents wait for every node's answer to a suspected hang
// before the answers at hand decide (a node whose agent hangs too).
constexpr auto kHangAnswerGrace = std::chrono::seconds(5);

// One node's answer to a suspected hang, published as a "hang" event: the
// worker it would name (hungSeconds and stopped set), or none when every
// worker of the node made progress at its last sample.
struct HangAnswer {
  int nodeRank = -1;
  std::optional<WorkerFailure> worker;

  std::string toJson() const;
  // Throws RendezvousError when `json` is not an answer.
  static HangAnswer fromJson(const std::string& json);
};

// Whether a worker's main thread, by its wait channel (WorkerFailure::waits),
// waits for other processes: on a lock or condition (futex), for a socket
// or pipe (epoll, poll, select, a socket's receive or accept), as a rank
// blocked in a collective waits for its peers. False for any other wait
// (a sleep, a disk, a stop) and when unknown.
bool waitsForPeers(const std::string& waits);

// Whether `a` is the likelier cause of a hang than `b`: a worker stopped by
// a signal before one that is not (the others wait for it); then, when the
// wait channels of both are known, one that waits for something else
// before one that waits for its peers (rank 1 sleeps, rank 0 waits in the
// all_reduce for it); then the one whose progress stopped first (the
// longest idle), then the lower rank.
bool likelierHangCause(const WorkerFailure& a, const WorkerFailure& b);

// The judgement of --hang-timeout for one round (docs/launcher.md, "Hung
// workers"), a part of the Supervisor: samples and answers in, the worker
// to name out. No clock, no system call. Not thread-safe.
//
// A worker makes progress at a sample when its reports on its progress pipe
// grew since the sample before (once it has reported at all), else when its
// CPU time grew by kMinProgressTicks or its output grew. The node whose worker first reaches the
// timeout publishes its answer; every other node answers once it reads that; when every node has
// answered (or kHangAnswerGrace after the first answer) the likeliest cause of all answers is
// named, the same on every node.
class HangWatch {
 public:
  // Records a sample of this node's running workers (those absent exited).
  // True when one has now made no progress for `timeout` and this node has
  // not answered: publish answer() then.
  bool sample(const std::vector<WorkerProgress>& workers, std::chrono::milliseconds timeout,
              TimePoint now);
  // This node's answer as of the last sample: its likeliest cause, if any.
  // Marks the node answered.
  HangAnswer answer(int nodeRank);
  bool answered() const { return answered_; }
  // An answer read from the store (this node's too); the first per node counts.
  void take(const HangAnswer& answer, TimePoint now);
  // The worker to name: once, when all `numNodes` answered or the grace
  // after the first answer passed by `now`.
  std::optional<WorkerFailure> verdict(int numNodes, TimePoint now);

 private:
  struct Worker {
    WorkerProgress last;
    TimePoint since;  // its last progress (or its first sample)
  };

  std::map<int, Worker> workers_;  // by local rank
  std::chrono::milliseconds timeout_{0};
  TimePoint lastSample_{};
  bool answered_ = false;
  std::map<int, HangAnswer> answers_;  // by node
  std::optional<TimePoint> firstAnswer_;
  bool decided_ = false;
};

}  // namespace distrun::launch
