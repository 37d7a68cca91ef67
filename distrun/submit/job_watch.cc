#include "distrun/submit/job_watch.h"

#include <algorithm>
#include <fstream>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/submit/job_status.h"

namespace distrun::submit {
namespace {

constexpr double kTick = 0.5;
constexpr double kFirstPoll = 1;
constexpr double kLongestPoll = 30;

bool isFinal(const std::string& state) {
  static const std::vector<std::string> kFinal = {"COMPLETED", "FAILED",        "CANCELLED",
                                                  "TIMEOUT",   "OUT_OF_MEMORY", "NODE_FAIL",
                                                  "BOOT_FAIL", "DEADLINE",      "PREEMPTED"};
  return std::find(kFinal.begin(), kFinal.end(), state) != kFinal.end();
}

// The job's output file, copied on from where the last call stopped. Under
// a drawn status line only whole lines are copied, the line erased first;
// the rest waits for its newline, or for `toTheEnd`.
class OutputFollower {
 public:
  explicit OutputFollower(std::string path) : path_(std::move(path)) {}
  void copyNew(std::ostream& out, LiveLine& line, bool toTheEnd = false) {
    read();
    size_t end = pending_.size();
    if (line.mode() == StatusMode::kLine && !toTheEnd) {
      const size_t newline = pending_.rfind('\n');
      end = newline == std::string::npos ? 0 : newline + 1;
    }
    if (end == 0) return;
    line.clear();
    out << std::string_view(pending_).substr(0, end) << std::flush;
    pending_.erase(0, end);
  }

 private:
  void read() {
    if (path_.empty()) return;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;
    in.seekg(0, std::ios::end);
    std::streamoff size = in.tellg();
    if (size < offset_) offset_ = 0;  // truncated: the job started it anew
    in.seekg(offset_);
    std::string fresh(static_cast<size_t>(size - offset_), '\0');
    in.read(fresh.data(), static_cast<std::streamsize>(fresh.size()));
    offset_ = size;
    pending_ += fresh;
  }

  std::string path_;
  std::streamoff offset_ = 0;
  std::string pending_;  // read, not copied yet
};

LiveLineOptions lineOptions(const WatchWorld& w, const double& clock) {
  LiveLineOptions o;
  o.mode = w.status;
  o.columns = w.columns;
  o.now = [&clock] { return clock; };
  o.plainPrefix = "distrun submit: ";
  return o;
}

// The job's state for `seconds` and, once it runs, its status file's
// record; without a record no plain line (a pending job says so when its
// state changes).
void showStatus(LiveLine& line, const WatchRequest& r, const std::string& state, double seconds) {
  if (line.mode() == StatusMode::kNone || state.empty()) return;
  std::optional<StatusRecord> record;
  if (state == "RUNNING" && !r.statusPath.empty()) record = readStatusFile(r.statusPath);
  if (line.mode() == StatusMode::kPlain && !record) return line.hide();
  line.show(jobStatusText(r.jobId, state, seconds, record));
}

// "JobId=7 JobState=COMPLETED ... ExitCode=2:0" -> the named field's value.
std::optional<std::string> field(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string token; in >> token;) {
    if (token.rfind(name + "=", 0) == 0) return token.substr(name.size() + 1);
  }
  return std::nullopt;
}

// Slurm's "N:S": exit status N, or signal S.
int exitCodeOf(const std::string& pair) {
  std::vector<std::string> parts = split(pair, ':');
  int signal = parts.size() > 1 ? static_cast<int>(parseCount(parts[1], "ExitCode", 255)) : 0;
  return signal > 0 ? 128 + signal : static_cast<int>(parseCount(parts[0], "ExitCode", 255));
}

struct Ending {
  std::string state;
  int exitCode = 0;
};

std::optional<Ending> endingFromScontrol(const std::string& id, WatchWorld& w) {
  ToolResult r = w.slurm({"scontrol", "show", "job", id, "--oneliner"}, "");
  std::optional<std::string> state = field(r.out, "JobState");
  std::optional<std::string> code = field(r.out, "ExitCode");
  if (r.exitCode != 0 || !state || !code) return std::nullopt;
  return Ending{*state, exitCodeOf(*code)};
}

std::optional<Ending> endingFromSacct(const std::string& id, WatchWorld& w) {
  ToolResult r = w.slurm({"sacct", "-n", "-X", "-P", "-j", id, "-o", "State,ExitCode"}, "");
  std::vector<std::string> parts = split(trim(r.out), '|');
  if (r.exitCode != 0 || parts.size() != 2) return std::nullopt;
  return Ending{std::string(trim(split(parts[0], ' ')[0])), exitCodeOf(parts[1])};
}

Ending ending(const WatchRequest& request, WatchWorld& w) {
  if (auto e = endingFromScontrol(request.jobId, w)) return *e;
  if (auto e = endingFromSacct(request.jobId, w)) return *e;
  throw Error(
      ExitCode::kPeerLost,
      fmt::format("submit: job {} has left Slurm's queue and its exit code is gone (Slurm "
                  "keeps a finished job MinJobAge seconds, and this cluster has no "
                  "accounting for sacct){}",
                  request.jobId,
                  request.outputPath.empty() ? "" : "; its output is " + request.outputPath));
}

// The job's state in the queue; empty once the queue no longer lists it.
std::string queueState(const std::string& id, WatchWorld& w) {
  ToolResult r = w.slurm({"squeue", "-h", "-j", id, "-o", "%T"}, "");
  return r.exitCode == 0 ? std::string(trim(r.out)) : "";
}

int onInterrupt(const WatchRequest& request, WatchWorld& w) {
  std::optional<bool> cancel =
      w.ask(fmt::format("distrun submit: cancel job {}? [y/N] ", request.jobId));
  if (cancel.value_or(false)) {
    ToolResult r = w.slurm({"scancel", request.jobId}, "");
    w.err << fmt::format("distrun submit: job {} {}\n", request.jobId,
                         r.exitCode == 0 ? "cancelled" : "not cancelled: " + slurmMessage(r));
  } else {
    w.err << fmt::format(
        "distrun submit: stopped following job {}; it keeps running (scancel {} "
        "stops it)\n",
        request.jobId, request.jobId);
  }
  return 130;
}

}  // namespace

int watchJob(const WatchRequest& request, WatchWorld& w) {
  double clock = 0, since = 0;  // seconds followed; when the state last changed
  LiveLine line(w.err, lineOptions(w, clock));
  OutputFollower output(request.outputPath);
  std::string lastState;
  double interval = kFirstPoll, untilPoll = 0;
  for (;; clock += kTick) {
    output.copyNew(w.out, line);
    if (w.interrupted()) {
      line.hide();
      return onInterrupt(request, w);
    }
    if (untilPoll <= 0) {
      std::string state = queueState(request.jobId, w);
      if (state != lastState && !state.empty()) {
        line.clear();
        w.err << fmt::format("distrun submit: job {} is {}\n", request.jobId, state);
        since = clock;
      }
      lastState = state;
      if (state.empty() || isFinal(state)) break;
      untilPoll = interval;
      interval = std::min(interval * 2, kLongestPoll);
    }
    showStatus(line, request, lastState, clock - since);
    w.sleep(kTick);
    untilPoll -= kTick;
  }
  line.hide();
  Ending end = ending(request, w);
  output.copyNew(w.out, line, true);
  w.err << fmt::format("distrun submit: job {} ended {} with exit code {}\n", request.jobId,
                       end.state, end.exitCode);
  return end.exitCode;
}

std::optional<std::string> expandOutputPattern(const std::string& pattern, const std::string& id,
                                               const std::string& jobName,
                                               const std::string& user) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    if (c == 'j' || c == 'A')
      out += id;
    else if (c == 'x')
      out += jobName;
    else if (c == 'u')
      out += user;
    else if (c == '%')
      out += '%';
    else
      return std::nullopt;
  }
  return out;
}

}  // namespace distrun::submit
