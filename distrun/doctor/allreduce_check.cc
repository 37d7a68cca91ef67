#include "distrun/doctor/allreduce_check.h"

#include <memory>

#include <fmt/format.h>

#include "distrun/comm/connect.h"
#include "distrun/comm_bench/runner.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {

namespace {

constexpr const char* kAllreduce = "allreduce";

comm_bench::BenchOptions sweep(const ProbeContext& ctx) {
  comm_bench::BenchOptions o;
  o.collective = "all_reduce";
  o.minBytes = size_t{1} << 20;
  o.maxBytes = size_t{64} << 20;
  o.stepFactor = 4;
  o.iters = 5;
  o.warmupIters = 2;
  o.checkIters = 1;
  o.timeoutSeconds =
      static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(ctx.limit()).count());
  return o;
}

// The variables comm::connect reads: the node's first task is rank
// `nodeRank` of a world of one rank per node, meeting at the doctor's store.
MapEnvironment nodeWorld(const ProbeContext& ctx, const Meeting& meeting) {
  MapEnvironment env{
      {"RANK", std::to_string(ctx.layout.nodeRank)},
      {"WORLD_SIZE", std::to_string(ctx.layout.numNodes)},
      {"LOCAL_WORLD_SIZE", "1"},
      {"DISTRUN_STORE", fmt::format("{}:{}", meeting.host, meeting.port)},
      {"DISTRUN_TOKEN", meeting.token},
      {"DISTRUN_RUN_ID", "doctor"},
  };
  if (auto iface = ctx.env.get("GLOO_SOCKET_IFNAME")) env.set("GLOO_SOCKET_IFNAME", *iface);
  return env;
}

}  // namespace

AllreduceFigures measureAllreduce(const ProbeContext& ctx, const Meeting& meeting) {
  const comm_bench::BenchOptions options = sweep(ctx);
  comm::ConnectOptions connect{.backend = "gloo", .timeout = ctx.limit(), .name = "doctor"};
  std::unique_ptr<comm::Communicator> comm = comm::connect(nodeWorld(ctx, meeting), connect);
  const comm_bench::BenchReport report = comm_bench::runCollectiveBench(*comm, options);
  AllreduceFigures figures;
  figures.nodes = comm->size();
  figures.wrong = report.wrongTotal();
  if (!report.rows.empty()) {
    const comm_bench::ResultRow& last = report.rows.back();
    figures.bytes = last.bytes;
    figures.busbwGbps = last.outOfPlace.busBw;
    figures.timeUs = last.outOfPlace.timeUs;
  }
  return figures;
}

CheckResult judgeAllreduce(const AllreduceFigures& f, std::optional<double> minBusbw) {
  const std::string detail = fmt::format("{:.2f} GB/s bus bandwidth, {} MiB among {} nodes",
                                         f.busbwGbps, f.bytes >> 20, f.nodes);
  CheckResult r;
  if (f.wrong > 0) {
    r = fail(kAllreduce, fmt::format("{} values came back wrong ({})", f.wrong, detail),
             "the network or a node's memory corrupts data: run distrun bench all_reduce on "
             "subsets of the nodes to find it, and tell the admins");
  } else if (minBusbw && f.busbwGbps < *minBusbw) {
    r = fail(kAllreduce,
             fmt::format("{}; at least {:.2f} GB/s wanted (--min-busbw)", detail, *minBusbw),
             "the nodes talk over a slow network: check the network check's interfaces "
             "(NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME) and ask the admins about the fabric");
  } else {
    r = ok(kAllreduce, detail);
  }
  r.values["busbw_gbps"] = f.busbwGbps;
  r.values["bytes"] = static_cast<double>(f.bytes);
  r.values["time_us"] = f.timeUs;
  return r;
}

}  // namespace distrun::doctor
