#include "distrun/launch/failure_report.h"

#include <string.h>

#include <ctime>
#include <ostream>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/common/error.h"
#include "distrun/common/exit_code.h"

namespace distrun::launch {

namespace {

// The module of the last "ModuleNotFoundError: No module named 'torch'" in
// `tail`; empty when there is none.
std::string missingModule(const std::vector<std::string>& tail) {
  constexpr std::string_view kError = "ModuleNotFoundError: No module named '";
  for (auto line = tail.rbegin(); line != tail.rend(); ++line) {
    const size_t at = line->find(kError);
    if (at == std::string::npos) continue;
    const size_t begin = at + kError.size();
    const size_t end = line->find('\'', begin);
    if (end != std::string::npos) return line->substr(begin, end - begin);
  }
  return "";
}

void printPythonAdvice(const WorkerFailure& f, std::ostream& out) {
  const std::string module = f.python.empty() ? "" : missingModule(f.stderrTail);
  if (module.empty()) return;
  out << fmt::format(
      "distrun: Python {} cannot import '{}': install it for that Python, or choose another "
      "with --python PATH or DISTRUN_PYTHON=PATH\n",
      f.python, module);
}

// "stopped by a signal (state T), no progress for 31 s (--hang-timeout 30)"
std::string hangHeadline(const WorkerFailure& f) {
  return fmt::format("{}no progress for {:.0f} s (--hang-timeout {:g})",
                     f.stopped ? "stopped by a signal (state T), " : "", f.hungSeconds,
                     f.hangTimeout);
}

// What "no progress" measured, and what to do about it.
void printHangAdvice(const WorkerFailure& f, std::ostream& out) {
  if (f.reportsProgress) {
    out << fmt::format(
        "distrun: no progress: rank {} reported none on DISTRUN_PROGRESS_FD for {:.0f} s (it "
        "had reported before)\n",
        f.rank, f.hungSeconds);
  } else {
    out << fmt::format(
        "distrun: no progress: rank {}'s processes used no CPU time and wrote no output for "
        "{:.0f} s\n",
        f.rank, f.hungSeconds);
  }
  if (f.stopped) {
    out << fmt::format(
        "distrun: something sent rank {} SIGSTOP (or SIGTSTP, SIGTTIN, SIGTTOU): find what; "
        "a stopped worker never resumes by itself\n",
        f.rank);
  }
  if (!f.waits.empty()) {
    out << fmt::format("distrun: rank {}'s threads wait in the kernel at: {}\n", f.rank, f.waits);
  }
  out << fmt::format(
      "distrun: to see where rank {} waits, run 'py-spy dump --pid {}' or 'gdb -p {}' on {} "
      "before --hang-timeout ends it, or raise --hang-timeout if it is only slow\n",
      f.rank, f.pid, f.pid, f.host);
}

// The exception as @record wrote it: its words first, then its traceback.
void printRecordedError(const WorkerFailure& f, std::ostream& out) {
  out << fmt::format("distrun: rank {} raised {} (its error file, TORCHELASTIC_ERROR_FILE)\n",
                     f.rank, f.errorMessage);
  constexpr size_t kLines = 40;  // the innermost frames matter most
  size_t skip = f.errorTraceback.size() > kLines ? f.errorTraceback.size() - kLines : 0;
  if (skip > 0) out << fmt::format("  | ... ({} lines of the traceback left out)\n", skip);
  for (size_t i = skip; i < f.errorTraceback.size(); ++i) {
    out << "  | " << f.errorTraceback[i] << "\n";
  }
}

}  // namespace

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : std::to_string(signal);
}

int WorkerFailure::agentExitCode() const {
  if (hung()) return toInt(ExitCode::kTimeout);
  return signal != 0 ? 128 + signal : exitCode;
}

std::string WorkerFailure::cause() const {
  if (hung()) return fmt::format("no progress for {:.0f} s", hungSeconds);
  return signal ? fmt::format("signal {}", signal) : fmt::format("exit code {}", exitCode);
}

std::string WorkerFailure::toJson() const {
  nlohmann::ordered_json j;
  j["rank"] = rank;
  j["local_rank"] = localRank;
  j["node_rank"] = nodeRank;
  j["host"] = host;
  j["pid"] = pid;
  j["exit_code"] = exitCode;
  j["signal"] = signal;
  j["signal_name"] = signal != 0 ? signalName(signal) : "";
  j["time"] = time;
  j["exited_ms"] = exitedMs;
  j["stderr_tail"] = stderrTail;
  j["python"] = python;
  if (errorTimestamp != 0 || !errorMessage.empty()) {
    j["error_message"] = errorMessage;
    j["error_traceback"] = errorTraceback;
    j["error_timestamp"] = errorTimestamp;
    j["error_written_ms"] = errorWrittenMs;
  }
  if (afterRaiseOf >= 0) j["after_raise_of"] = afterRaiseOf;
  if (!waits.empty()) j["waits"] = waits;
  if (hung()) {
    j["hung_seconds"] = hungSeconds;
    j["hang_timeout"] = hangTimeout;
    j["stopped"] = stopped;
    j["reports_progress"] = reportsProgress;
  }
  return j.dump();
}

WorkerFailure WorkerFailure::fromJson(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    WorkerFailure f;
    f.rank = j.at("rank");
    f.localRank = j.at("local_rank");
    f.nodeRank = j.at("node_rank");
    f.host = j.at("host");
    f.pid = j.at("pid");
    f.exitCode = j.at("exit_code");
    f.signal = j.at("signal");
    f.time = j.at("time");
    f.exitedMs = j.value("exited_ms", 0LL);
    f.stderrTail = j.at("stderr_tail").get<std::vector<std::string>>();
    f.python = j.value("python", "");
    f.errorMessage = j.value("error_message", "");
    f.errorTraceback = j.value("error_traceback", std::vector<std::string>{});
    f.errorTimestamp = j.value("error_timestamp", 0LL);
    f.errorWrittenMs = j.value("error_written_ms", 0LL);
    f.afterRaiseOf = j.value("after_raise_of", -1);
    f.waits = j.value("waits", "");
    f.hungSeconds = j.value("hung_seconds", 0.0);
    f.hangTimeout = j.value("hang_timeout", 0.0);
    f.stopped = j.value("stopped", false);
    f.reportsProgress = j.value("reports_progress", false);
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw RendezvousError(fmt::format("malformed failure record from a peer: {}", e.what()));
  }
}

std::string utcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

void printFailureReport(const WorkerFailure& f, const std::string& runId, int restart,
                        int maxRestarts, const std::string& logFolder, std::ostream& out) {
  std::string how = f.signal != 0
                        ? fmt::format("killed by signal {} ({})", f.signal, signalName(f.signal))
                        : fmt::format("exit code {}", f.exitCode);
  if (f.hung()) how = hangHeadline(f);
  out << fmt::format(
      "distrun: job {} failed (restart {} of {}): root cause was rank {} (local "
      "rank {}) on node {} ({}), pid {}, {}, at {}\n",
      runId, restart, maxRestarts, f.rank, f.localRank, f.nodeRank, f.host, f.pid, how, f.time);
  if (!logFolder.empty()) {
    out << fmt::format("distrun: rank {}'s log files are in {} on {}\n", f.rank, logFolder, f.host);
  }
  if (f.hung()) printHangAdvice(f, out);
  if (!f.python.empty()) out << fmt::format("distrun: rank {} ran Python {}\n", f.rank, f.python);
  if (!f.errorMessage.empty()) {
    printRecordedError(f, out);
    return;
  }
  if (f.stderrTail.empty()) {
    out << "distrun: rank " << f.rank << " wrote nothing to stderr\n";
    return;
  }
  out << "distrun: last lines of rank " << f.rank << "'s stderr:\n";
  for (const std::string& line : f.stderrTail) out << "  | " << line << "\n";
  printPythonAdvice(f, out);
}

}  // namespace distrun::launch
