#pragma once

// Between the merge's two passes: where each process of the scan lands on
// the merged trace's clock, which process of the trace it is, and what the
// flows count.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distrun/trace_merge/clock_alignment.h"
#include "distrun/trace_merge/collective_index.h"
#include "distrun/trace_merge/folder_scan.h"

namespace distrun::trace_merge {

struct MergePlan {
  FolderScan scan;
  std::vector<std::vector<Placement>> parts;  // [file][part] of scan.files
  // [i] of scan.torch: the shift of a clocked export (its times are
  // distrunClockStartUs + ts); for a bare one, where its start goes.
  std::vector<Placement> torch;
  std::vector<double> torchAnchors;      // reference time of a bare export's start
  double timeZero = 0;                   // the reference time of the job's first event: ts 0
  int maxRank = -1;                      // the highest rank of any file
  std::map<int, std::string> rankHosts;  // "node1" or "node1, node2"
  nlohmann::json clocks = nlohmann::json::object();  // label -> how it was placed
  FlowCounts flows;
  std::vector<std::string> notes;
};

// Places every process of `scan` (alignClocks), anchors bare PyTorch
// exports, and counts the flows.
MergePlan planMerge(FolderScan scan);

// The trace's process ids: rank R is R + 1 (Perfetto reserves 0), the
// agents follow the highest rank.
int pidOfRank(int rank);
int pidOfAgent(const MergePlan& plan, int nodeRank);
// "rank 0 (node1)", "launcher node 0 (node1)".
std::string rankProcessName(const MergePlan& plan, int rank);
std::string agentProcessName(const ScannedFile& agent);

}  // namespace distrun::trace_merge
