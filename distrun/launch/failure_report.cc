#include "distrun/launch/failure_report.h"

#include <string.h>

#include <ctime>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/common/error.h"

namespace distrun::launch {

std::string signalName(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : std::to_string(signal);
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
  j["stderr_tail"] = stderrTail;
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
    f.stderrTail = j.at("stderr_tail").get<std::vector<std::string>>();
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
  out << fmt::format(
      "distrun: job {} failed (restart {} of {}): first failure was rank {} (local "
      "rank {}) on node {} ({}), pid {}, {}, at {}\n",
      runId, restart, maxRestarts, f.rank, f.localRank, f.nodeRank, f.host, f.pid, how, f.time);
  if (!logFolder.empty()) {
    out << fmt::format("distrun: rank {}'s log files are in {} on {}\n", f.rank, logFolder, f.host);
  }
  if (f.stderrTail.empty()) {
    out << "distrun: rank " << f.rank << " wrote nothing to stderr\n";
    return;
  }
  out << "distrun: last lines of rank " << f.rank << "'s stderr:\n";
  for (const std::string& line : f.stderrTail) out << "  | " << line << "\n";
}

}  // namespace distrun::launch
