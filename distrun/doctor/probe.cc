#include "distrun/doctor/probe.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/doctor/allreduce_check.h"
#include "distrun/doctor/check_runner.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/clock_check.h"
#include "distrun/doctor/job_report.h"
#include "distrun/doctor/meeting.h"
#include "distrun/doctor/report_format.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::doctor {

namespace {

using std::chrono::milliseconds;
using Deadline = std::chrono::steady_clock::time_point;

milliseconds left(Deadline deadline) {
  auto rest = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(rest, milliseconds(1));
}

// The checks this task runs: all on a node's first task, only its own
// CPU binding on the node's further tasks (srun's one task per rank).
// `--python none`: the training needs no Python, and the check says so.
std::vector<Check> checksOf(const ProbeContext& ctx) {
  std::vector<Check> mine;
  for (Check check : nodeChecks()) {
    if (ctx.layout.localRank != 0 && check.name != "cpu-binding") continue;
    if (check.name == "python" && ctx.options.python == "none") {
      check.run = [](const ProbeContext&) {
        return skip("python", "--python none: the training runs without Python");
      };
    }
    mine.push_back(std::move(check));
  }
  return mine;
}

NodeReport checkThisNode(const std::shared_ptr<const ProbeContext>& ctx,
                         std::optional<CheckResult> clock) {
  NodeReport report{ctx->node, runChecks(checksOf(*ctx), ctx)};
  if (CheckResult* binding = report.find("cpu-binding")) {
    binding->facts["local_rank"] = std::to_string(ctx->layout.localRank);
  }
  if (clock) report.results.push_back(*clock);
  return report;
}

std::optional<CheckResult> clockOf(const ProbeContext& ctx, rdzv::StoreClient& store,
                                   const Meeting& meeting) {
  if (!isSelected(ctx.options, "clock") || ctx.layout.localRank != 0) return std::nullopt;
  if (ctx.layout.nodeRank == 0) return referenceClock(ctx.layout.numNodes);
  return judgeClock(askClock(store, ctx.layout.nodeRank, meeting.answerWindow),
                    ctx.layout.masterHost);
}

// Rank 0: every task's report, nullopt for those that did not come in time.
std::vector<std::optional<NodeReport>> collectReports(rdzv::StoreClient& store, int worldSize,
                                                      Deadline deadline) {
  std::vector<std::optional<NodeReport>> reports;
  for (int rank = 0; rank < worldSize; ++rank) {
    // Read at once when it is there, however late it has become.
    std::optional<std::string> text = store.tryGet(reportKey(rank));
    if (!text) text = store.get(reportKey(rank), left(deadline));
    if (text) {
      reports.push_back(parseNodeReport(*text, "rank " + std::to_string(rank)));
    } else {
      reports.push_back(std::nullopt);
    }
  }
  return reports;
}

// The nodes' first tasks measure together; rank 0 returns the result.
std::optional<CheckResult> allreduceOf(const ProbeContext& ctx, const Meeting& meeting,
                                       const std::string& decision, std::ostream& err) {
  if (ctx.layout.localRank != 0 || decision != "go") return std::nullopt;
  try {
    return judgeAllreduce(measureAllreduce(ctx, meeting), ctx.options.minBusbw);
  } catch (const Error& e) {
    if (ctx.layout.rank != 0) err << "distrun doctor: allreduce: " << e.what() << "\n";
    return allreduceFailed(e.what());
  }
}

// Rank 0's side after the reports: decide, measure, assemble, tell the
// others it is done and wait (briefly) until they read it.
DoctorReport leadJob(const std::shared_ptr<const ProbeContext>& ctx, rdzv::StoreClient& store,
                     const Meeting& meeting, Deadline deadline, std::ostream& err) {
  JobAnswers answers;
  answers.reports = collectReports(store, ctx->layout.worldSize, deadline);
  const std::string decision = allreduceDecision(*ctx, answers);
  store.set(kAllreduceKey, decision);
  answers.allreduce = allreduceOf(*ctx, meeting, decision, err);
  if (!answers.allreduce) answers.allreduce = allreduceSkipped(decision);
  return assembleReport(*ctx, answers, meeting.answerWindow);
}

void waitForOthers(rdzv::StoreClient& store, int worldSize) {
  const Deadline until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (store.add(kLeftKey, 0) < worldSize - 1 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(20));
  }
}

void followJob(const ProbeContext& ctx, rdzv::StoreClient& store, const Meeting& meeting,
               std::ostream& err) {
  const milliseconds wait = meeting.answerWindow + ctx.limit();
  std::optional<std::string> decision = store.get(kAllreduceKey, wait);
  if (decision) allreduceOf(ctx, meeting, *decision, err);
  if (!store.get(kDoneKey, wait)) {
    throw TimeoutError(
        fmt::format("rank 0 of distrun doctor (on {}) did not finish its report "
                    "within {} s: see its output",
                    ctx.layout.masterHost, (2 * wait).count() / 1000));
  }
  store.add(kLeftKey, 1);
}

std::optional<DoctorReport> runInJob(const std::shared_ptr<const ProbeContext>& ctx,
                                     std::ostream& err) {
  const Meeting meeting = meetingOf(*ctx);
  const Deadline deadline = std::chrono::steady_clock::now() + meeting.answerWindow;
  const bool lead = ctx->layout.rank == 0;
  std::unique_ptr<rdzv::StoreServer> server;
  if (lead) {
    server = std::make_unique<rdzv::StoreServer>(
        rdzv::storeBindAddress(meeting.host, ctx->layout.numNodes > 1), meeting.port,
        meeting.token);
  }
  rdzv::StoreClient store(meeting.host, meeting.port, meeting.token, meeting.answerWindow);
  std::jthread clocks;  // joined on every way out
  if (lead && isSelected(ctx->options, "clock") && ctx->layout.numNodes > 1) {
    clocks = std::jthread([&] {
      rdzv::StoreClient own(meeting.host, meeting.port, meeting.token, meeting.answerWindow);
      answerClocks(own, ctx->layout.numNodes, deadline);
    });
  }
  NodeReport mine = checkThisNode(ctx, clockOf(*ctx, store, meeting));
  store.set(reportKey(ctx->layout.rank), nodeReportText(mine));
  if (!lead) {
    followJob(*ctx, store, meeting, err);
    return std::nullopt;
  }
  DoctorReport report = leadJob(ctx, store, meeting, deadline, err);
  if (clocks.joinable()) clocks.join();
  store.set(kDoneKey, "done");
  waitForOthers(store, ctx->layout.worldSize);
  return report;
}

}  // namespace

std::optional<DoctorReport> runProbe(std::shared_ptr<const ProbeContext> ctx, std::ostream& err) {
  if (ctx->layout.worldSize > 1) return runInJob(ctx, err);
  JobAnswers answers;
  answers.reports.push_back(checkThisNode(ctx, std::nullopt));
  answers.allreduce = allreduceSkipped("skip:one node: no network between nodes to measure");
  return assembleReport(*ctx, answers, std::chrono::milliseconds(0));
}

}  // namespace distrun::doctor
