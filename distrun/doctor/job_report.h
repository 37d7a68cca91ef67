#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "distrun/doctor/check_result.h"
#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// What rank 0 has once the nodes answered: every task's report by rank
// (nullopt: it did not report in time) and the allreduce's result.
struct JobAnswers {
  std::vector<std::optional<NodeReport>> reports;
  std::optional<CheckResult> allreduce;
};

// Whether --checks selects `check` (every check when the list is empty).
bool isSelected(const DoctorOptions& options, const std::string& check);

// "clock" on rank 0's node: the reference every other node is held to.
CheckResult referenceClock(int numNodes);

// Whether the nodes measure an allreduce: "go", or "skip:REASON" (not
// selected, one node, a node that did not answer).
std::string allreduceDecision(const ProbeContext& ctx, const JobAnswers& answers);
CheckResult allreduceSkipped(const std::string& decision);
CheckResult allreduceFailed(const std::string& why);

// The whole report: a node per host of the job in node order, each node's
// tasks' results merged (a node's further tasks add their CPU binding, the
// worst of them counting, "local rank N:" in its detail), "answer" first
// (fail, naming the ranks, for a node whose tasks did not all report
// within `window`), the allreduce on every node that answered, then the
// cross-node checks (straggler, torch-version); report.checks lists every
// check present in allCheckNames() order. `seconds` is left for the caller.
DoctorReport assembleReport(const ProbeContext& ctx, const JobAnswers& answers,
                            std::chrono::milliseconds window);

}  // namespace distrun::doctor
