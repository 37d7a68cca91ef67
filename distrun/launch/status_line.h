#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/clock.h"
#include "distrun/common/live_line.h"
#include "distrun/common/status_record.h"

namespace distrun::launch {

// One worker's latest status record (docs/launcher.md, "Status records"),
// as WorkerGroup::statuses() gives it.
struct RankStatus {
  int rank = 0;
  StatusRecord record;
};

// What the agent's status line says, folded from the latest records of
// the ranks it sees: the lowest rank's record (rank 0's on the node that
// runs it: epoch, step, loss, samples/s), the ETA from that rank's steps
// per second since its first record, and the slowest rank when the ranks
// are not all at the same step. A plain value updated by the agent's loop; not thread-safe.
class JobProgress {
 public:
  // Folds the ranks' records seen at `now` (seconds, any origin); an empty
  // list forgets them (a round ended) but keeps the last rate.
  void update(const std::vector<RankStatus>& ranks, double now);
  // The folded record (eta_s, slowest_rank, slowest_step set when known);
  // nullopt without records.
  const std::optional<StatusRecord>& summary() const { return summary_; }
  // Whether rank 0 is among the ranks folded.
  bool hasRankZero() const { return hasRankZero_; }

 private:
  static int64_t stepsDone(const StatusRecord& lead);
  void measureRate(const StatusRecord& lead, double now);
  std::optional<double> eta(const StatusRecord& lead) const;

  std::optional<StatusRecord> summary_;
  bool hasRankZero_ = false;
  // When the measure of the lead rank's rate began, its steps done then,
  // and at the last measure.
  std::optional<double> rateSince_;
  int64_t firstDone_ = 0;
  int64_t lastDone_ = 0;
  std::optional<double> stepsPerSecond_;
};

// The agent's live status (docs/observability.md, "Live progress"): the
// status line on `err` (kLine: under the workers' prefixed lines; kPlain:
// "distrun: " and the line every 30 s, only from the agent that sees rank
// 0), and with `statusFile` the folded record written there (atomically,
// at most every 2 s, and at finish()) by the agent that sees rank 0, for
// `distrun submit --wait`. Owned by the agent's loop; not thread-safe.
class AgentStatus {
 public:
  // `mode` resolved (not kAuto); `clock` and `err` must outlive it;
  // `columns`: the terminal's width.
  AgentStatus(StatusMode mode, std::ostream& err, const Clock& clock, std::string statusFile,
              std::function<int()> columns);

  // The line the workers' console output erases first (WorkerOutput).
  LiveLine& line() { return line_; }
  // Folds the ranks' records and shows them; the status file when due.
  void update(const std::vector<RankStatus>& ranks);
  // When update() next has something to draw or write; nullopt: nothing.
  std::optional<TimePoint> nextDue() const;
  // Writes the status file a last time and erases the line.
  void finish();

 private:
  double seconds() const;
  void writeFile(bool force);

  std::ostream& err_;
  const Clock& clock_;
  std::string statusFile_;
  LiveLine line_;
  JobProgress progress_;
  std::optional<double> lastFileWrite_;
  std::string written_;  // what the status file holds
};

// The LiveLine options of the agent's line in `mode`.
LiveLineOptions agentLineOptions(StatusMode mode, std::function<double()> now,
                                 std::function<int()> columns);

}  // namespace distrun::launch
