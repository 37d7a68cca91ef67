#include "distrun/launch/status_line.h"

#include <algorithm>
#include <ostream>
#include <utility>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"

namespace distrun::launch {

namespace {

// How often the status file is rewritten at most (it is fsynced).
constexpr double kStatusFileInterval = 2;

// A rank's place in the run, for "slowest": (epoch, step).
std::pair<int64_t, int64_t> placeOf(const StatusRecord& r) {
  return {r.epoch.value_or(0), r.step.value_or(0)};
}

// The rank furthest behind when the ranks are not all at the same place.
const RankStatus* slowestOf(const std::vector<RankStatus>& ranks) {
  const RankStatus* slowest = nullptr;
  const RankStatus* fastest = nullptr;
  for (const RankStatus& r : ranks) {
    if (!r.record.step) continue;
    if (!slowest || placeOf(r.record) < placeOf(slowest->record)) slowest = &r;
    if (!fastest || placeOf(fastest->record) < placeOf(r.record)) fastest = &r;
  }
  if (!slowest || placeOf(slowest->record) == placeOf(fastest->record)) return nullptr;
  return slowest;
}

}  // namespace

void JobProgress::update(const std::vector<RankStatus>& ranks, double now) {
  if (ranks.empty()) {
    summary_.reset();
    hasRankZero_ = false;
    rateSince_.reset();
    return;
  }
  const RankStatus& lead = *std::min_element(
      ranks.begin(), ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  StatusRecord s = lead.record;
  measureRate(s, now);
  s.etaSeconds = eta(s);
  const RankStatus* slowest = slowestOf(ranks);
  s.slowestRank = slowest ? std::optional<int64_t>(slowest->rank) : std::nullopt;
  s.slowestStep = slowest ? slowest->record.step : std::nullopt;
  summary_ = s;
  hasRankZero_ = lead.rank == 0;
}

// The lead rank's steps since the run's start: whole epochs of `steps`
// (when it says them) and this epoch's.
int64_t JobProgress::stepsDone(const StatusRecord& lead) {
  const int64_t epochs = lead.epoch && lead.steps ? (*lead.epoch - 1) * *lead.steps : 0;
  return epochs + lead.step.value_or(0);
}

// Steps per second since the lead rank's first record the agent saw,
// measured when its step changes: over the whole run, so that a rank
// that steps in bursts (a busy machine) and the pauses between epochs
// (evaluation) give a steady rate. A step count that goes back (a
// restart) begins a new measure, the last rate standing until it has two
// points.
void JobProgress::measureRate(const StatusRecord& lead, double now) {
  if (!lead.step) return;
  const int64_t done = stepsDone(lead);
  if (!rateSince_ || done < lastDone_) {
    rateSince_ = now;
    firstDone_ = done;
    lastDone_ = done;
    return;
  }
  if (done == lastDone_ || now <= *rateSince_) return;
  lastDone_ = done;
  stepsPerSecond_ = static_cast<double>(done - firstDone_) / (now - *rateSince_);
}

// The lead rank's steps left (this epoch's, then the later epochs' of as
// many steps) at the measured rate.
std::optional<double> JobProgress::eta(const StatusRecord& lead) const {
  if (!stepsPerSecond_ || *stepsPerSecond_ <= 0 || !lead.step || !lead.steps) return std::nullopt;
  int64_t left = std::max<int64_t>(*lead.steps - *lead.step, 0);
  if (lead.epoch && lead.epochs) {
    left += std::max<int64_t>(*lead.epochs - *lead.epoch, 0) * *lead.steps;
  }
  return static_cast<double>(left) / *stepsPerSecond_;
}

LiveLineOptions agentLineOptions(StatusMode mode, std::function<double()> now,
                                 std::function<int()> columns) {
  LiveLineOptions o;
  o.mode = mode;
  o.columns = std::move(columns);
  o.now = std::move(now);
  o.plainPrefix = "distrun: ";
  return o;
}

AgentStatus::AgentStatus(StatusMode mode, std::ostream& err, const Clock& clock,
                         std::string statusFile, std::function<int()> columns)
    : err_(err),
      clock_(clock),
      statusFile_(std::move(statusFile)),
      line_(err, agentLineOptions(
                     mode, [this] { return seconds(); }, std::move(columns))) {}

double AgentStatus::seconds() const {
  return std::chrono::duration<double>(clock_.now().time_since_epoch()).count();
}

void AgentStatus::update(const std::vector<RankStatus>& ranks) {
  progress_.update(ranks, seconds());
  const std::optional<StatusRecord>& s = progress_.summary();
  // Plain lines go to logs every node shares: only from rank 0's agent.
  const bool shown = s && (line_.mode() == StatusMode::kLine || progress_.hasRankZero());
  line_.show(shown ? describeStatus(*s) : "");
  line_.tick();
  writeFile(false);
}

std::optional<TimePoint> AgentStatus::nextDue() const {
  std::optional<double> due = line_.nextDue();
  if (!due) return std::nullopt;
  return TimePoint(
      std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(*due)));
}

void AgentStatus::finish() {
  writeFile(true);
  line_.hide();
}

// A status file that cannot be written is said once and given up: the job
// goes on.
void AgentStatus::writeFile(bool force) {
  const std::optional<StatusRecord>& s = progress_.summary();
  if (statusFile_.empty() || !s || !progress_.hasRankZero()) return;
  const std::string text = formatStatusRecord(*s);
  const double now = seconds();
  const bool soon = lastFileWrite_ && now - *lastFileWrite_ < kStatusFileInterval;
  if (text == written_ || (soon && !force)) return;
  lastFileWrite_ = now;
  try {
    writeFileAtomically(statusFile_, text, "status file (DISTRUN_STATUS_FILE)");
    written_ = text;
  } catch (const Error& e) {
    line_.clear();
    err_ << "distrun: " << e.what() << ": not written again\n";
    statusFile_.clear();
  }
}

}  // namespace distrun::launch
