#include "distrun/trace_merge/merge_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "distrun/common/strings.h"

namespace distrun::trace_merge {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

std::string partLabel(const ScannedFile& file, size_t i) {
  const TracePart& part = file.parts[i];
  if (part.header.restart > 0) {
    return fmt::format("{} (restart {})", labelOf(file.source), part.header.restart);
  }
  return i == 0 ? labelOf(file.source) : fmt::format("{} (start {})", labelOf(file.source), i + 1);
}

ClockSource sourceOf(const ScannedFile& file, size_t i) {
  const TracePart& part = file.parts[i];
  const bool agent = file.source.kind == SourceKind::kAgent;
  return {partLabel(file, i),  file.source.kind,
          part.header.rank,    agent ? file.source.index : part.header.nodeRank,
          part.header.restart, part.header.host,
          part.measured,       part.header};
}

// Where rank `rank` ran: its rank file's hosts, else the agents' that
// started it.
std::vector<std::string> hostsOfRank(const FolderScan& scan, int rank) {
  std::vector<std::string> hosts;
  auto add = [&hosts](const std::string& h) {
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  };
  for (const ScannedFile& f : scan.files) {
    if (f.source.kind != SourceKind::kWorker || f.source.index != rank) continue;
    for (const TracePart& part : f.parts) add(part.header.host);
  }
  if (!hosts.empty()) return hosts;
  for (const ScannedFile& f : scan.files) {
    for (const TracePart& part : f.parts) {
      for (const WorkerStart& start : part.starts) {
        if (start.rank == rank) add(part.header.host);
      }
    }
  }
  return hosts;
}

std::string torchHost(const FolderScan& scan, const ScannedTorch& t) {
  if (!t.info.host.empty()) return t.info.host;
  std::vector<std::string> hosts = hostsOfRank(scan, t.source.index);
  return hosts.empty() ? "" : hosts.back();
}

ClockSource sourceOf(const FolderScan& scan, const ScannedTorch& t) {
  ClockSource s;
  s.label = labelOf(t.source);
  s.kind = SourceKind::kTorch;
  s.rank = t.source.index;
  s.host = torchHost(scan, t);
  TraceHeader pair;
  pair.monotonicUs = *t.info.clockStartUs;
  pair.realtimeUs = *t.info.realtimeStartUs;
  s.pair = pair;
  return s;
}

void placeProcesses(MergePlan& plan) {
  std::vector<ClockSource> sources;
  for (const ScannedFile& f : plan.scan.files) {
    for (size_t i = 0; i < f.parts.size(); ++i) sources.push_back(sourceOf(f, i));
  }
  for (const ScannedTorch& t : plan.scan.torch) {
    if (t.info.clocked()) sources.push_back(sourceOf(plan.scan, t));
  }
  const std::vector<Placement> placed = alignClocks(sources, plan.notes);
  size_t next = 0;
  for (const ScannedFile& f : plan.scan.files) {
    plan.parts.emplace_back(placed.begin() + static_cast<long>(next),
                            placed.begin() + static_cast<long>(next + f.parts.size()));
    next += f.parts.size();
  }
  for (const ScannedTorch& t : plan.scan.torch) {
    plan.torch.push_back(t.info.clocked() ? placed[next++] : Placement{});
  }
  for (size_t i = 0; i < sources.size(); ++i) plan.clocks[sources[i].label] = placed[i].method;
}

double firstEvent(const MergePlan& plan) {
  double first = kNever;
  for (size_t f = 0; f < plan.scan.files.size(); ++f) {
    const ScannedFile& file = plan.scan.files[f];
    for (size_t i = 0; i < file.parts.size(); ++i) {
      first = std::min(first, file.parts[i].firstTs + plan.parts[f][i].shiftUs);
    }
  }
  for (size_t i = 0; i < plan.scan.torch.size(); ++i) {
    const TorchExport& info = plan.scan.torch[i].info;
    if (info.clocked())
      first = std::min(first, *info.clockStartUs + info.firstTs + plan.torch[i].shiftUs);
  }
  return first;
}

// The reference time of the last "worker_started" event of `rank`.
double workerStart(const MergePlan& plan, int rank) {
  double when = kNever;
  for (size_t f = 0; f < plan.scan.files.size(); ++f) {
    const ScannedFile& file = plan.scan.files[f];
    for (size_t i = 0; i < file.parts.size(); ++i) {
      for (const WorkerStart& start : file.parts[i].starts) {
        if (start.rank == rank) when = start.ts + plan.parts[f][i].shiftUs;
      }
    }
  }
  return when;
}

void anchorBareExports(MergePlan& plan, double jobStart) {
  for (const ScannedTorch& t : plan.scan.torch) {
    const std::string name = t.source.path;
    if (t.info.clocked()) {
      plan.torchAnchors.push_back(0);
      continue;
    }
    const double started = workerStart(plan, t.source.index);
    const bool atStart = std::isfinite(started);
    plan.torchAnchors.push_back(atStart ? started : std::isfinite(jobStart) ? jobStart : 0);
    plan.clocks[labelOf(t.source)] =
        atStart ? fmt::format("its profiler's start put at rank {}'s \"worker_started\" event",
                              t.source.index)
                : "its profiler's start put at the job's first event";
    plan.notes.push_back(fmt::format(
        "{}: no distrunClockStartUs (a bare export): its profiler's start is put at {}, an "
        "estimate (docs/observability.md, \"Python jobs\")",
        name,
        atStart ? fmt::format("rank {}'s \"worker_started\" launcher event", t.source.index)
                : "the job's first event"));
  }
}

void noteSkipped(const MergePlan& plan, std::vector<std::string>& notes) {
  for (const ScannedTorch& t : plan.scan.torch) {
    if (t.info.skipped == 0) continue;
    notes.push_back(fmt::format("{}: left out {} events of phases other than X, i and C",
                                t.source.path, t.info.skipped));
  }
}

void countFlows(MergePlan& plan) {
  std::map<int, std::set<int>> ranksByRound;
  for (const ScannedFile& f : plan.scan.files) {
    if (f.source.kind != SourceKind::kWorker) continue;
    for (const TracePart& part : f.parts) ranksByRound[part.header.restart].insert(f.source.index);
  }
  for (const ScannedTorch& t : plan.scan.torch) ranksByRound[0].insert(t.source.index);
  const FlowCounts counts = plan.scan.collectives.count(ranksByRound, plan.maxRank);
  plan.flows = counts;
}

int highestRank(const FolderScan& scan) {
  int highest = -1;
  for (const ScannedFile& f : scan.files) {
    if (f.source.kind == SourceKind::kWorker) highest = std::max(highest, f.source.index);
  }
  for (const ScannedTorch& t : scan.torch) highest = std::max(highest, t.source.index);
  return highest;
}

}  // namespace

MergePlan planMerge(FolderScan scan) {
  MergePlan plan;
  plan.scan = std::move(scan);
  plan.notes = plan.scan.notes;
  plan.maxRank = highestRank(plan.scan);
  placeProcesses(plan);
  const double jobStart = firstEvent(plan);
  anchorBareExports(plan, jobStart);
  double first = jobStart;
  for (size_t i = 0; i < plan.scan.torch.size(); ++i) {
    const TorchExport& info = plan.scan.torch[i].info;
    if (!info.clocked()) first = std::min(first, plan.torchAnchors[i] + info.firstTs);
  }
  plan.timeZero = std::isfinite(first) ? first : 0;
  noteSkipped(plan, plan.notes);
  countFlows(plan);
  for (int rank = 0; rank <= plan.maxRank; ++rank) {
    plan.rankHosts[rank] = join(hostsOfRank(plan.scan, rank), ", ");
  }
  for (size_t i = 0; i < plan.scan.torch.size(); ++i) {
    const ScannedTorch& t = plan.scan.torch[i];
    if (plan.rankHosts[t.source.index].empty()) plan.rankHosts[t.source.index] = t.info.host;
  }
  return plan;
}

int pidOfRank(int rank) { return rank + 1; }

int pidOfAgent(const MergePlan& plan, int nodeRank) { return plan.maxRank + 2 + nodeRank; }

std::string rankProcessName(const MergePlan& plan, int rank) {
  auto host = plan.rankHosts.find(rank);
  if (host == plan.rankHosts.end() || host->second.empty()) return fmt::format("rank {}", rank);
  return fmt::format("rank {} ({})", rank, host->second);
}

std::string agentProcessName(const ScannedFile& agent) {
  if (agent.parts.empty()) return labelOf(agent.source);
  return fmt::format("{} ({})", labelOf(agent.source), agent.parts.front().header.host);
}

}  // namespace distrun::trace_merge
