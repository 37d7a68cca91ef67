// PBS Pro / OpenPBS / Torque: the job script, or a task started by pbsdsh.
#include <fmt/format.h>

#include "distrun/cluster/job_layout.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

// PBS_NODEFILE has one line per slot, a host repeated once for each of its
// ranks, in rank order.
std::vector<std::string> readSlots(const std::string& path) {
  std::vector<std::string> slots;
  for (const std::string& line : split(readTextFile(path, "PBS_NODEFILE"), '\n')) {
    std::string host(trim(line));
    if (!host.empty()) slots.push_back(host);
  }
  if (slots.empty()) {
    throw ConfigError(fmt::format("PBS_NODEFILE={} lists no hosts", path));
  }
  return slots;
}

void placeTask(const std::vector<std::string>& slots, JobLayout& layout) {
  const std::string& self = slots[layout.rank];
  layout.localRank = 0;
  layout.localWorldSize = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] != self) continue;
    if (static_cast<int>(i) < layout.rank) ++layout.localRank;
    ++layout.localWorldSize;
  }
  for (const std::string& host : slots) {
    bool seen = false;
    for (const std::string& h : layout.hosts) seen = seen || h == host;
    if (!seen) layout.hosts.push_back(host);
    if (host == self && layout.nodeRank < 0) {
      layout.nodeRank = static_cast<int>(layout.hosts.size()) - 1;
    }
  }
  layout.numNodes = static_cast<int>(layout.hosts.size());
}

}  // namespace

std::optional<JobLayout> detectPbs(const Environment& env, const HostFacts& host) {
  std::optional<std::string> jobId = env.get("PBS_JOBID");
  if (!jobId) return std::nullopt;
  JobLayout layout;
  layout.scheduler = Scheduler::kPbs;
  layout.jobId = *jobId;
  std::optional<int> task = detail::readInt(env, "PBS_VNODENUM");
  std::optional<std::string> nodefile = env.get("PBS_NODEFILE");
  if (!task || !nodefile) {
    layout.hosts = {host.hostname};
    layout.masterHost = host.hostname;
    layout.stepId = "batch";
    layout.notes.push_back(
        "not a PBS task: this is a world of one process; start one task per "
        "rank with `mpiexec distrun exec -- PROGRAM` or pbsdsh");
    detail::readVisibleDevices(env, layout);
    return layout;
  }
  std::vector<std::string> slots = readSlots(*nodefile);
  layout.worldSize = static_cast<int>(slots.size());
  layout.rank = *task;
  if (layout.rank >= layout.worldSize) {
    throw ConfigError(
        fmt::format("PBS_VNODENUM={} contradicts PBS_NODEFILE={}: it lists {} slots, "
                    "expected PBS_VNODENUM < {}",
                    layout.rank, *nodefile, layout.worldSize, layout.worldSize));
  }
  layout.nodeRank = -1;
  placeTask(slots, layout);
  layout.masterHost = slots.front();
  detail::readVisibleDevices(env, layout);
  return layout;
}

}  // namespace distrun::cluster
