#include "distrun/comm/connect.h"

#include <unistd.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "distrun/comm/gloo/gloo_communicator.h"
#include "distrun/comm/job_store.h"
#include "distrun/comm/mpi/mpi_communicator.h"
#include "distrun/comm/nccl/connect_nccl.h"
#include "distrun/comm/reduce.h"
#include "distrun/comm/tuning.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/config.h"
#include "distrun/trace/config.h"
#include "distrun/trace/trace.h"

namespace distrun::comm {

namespace {

std::string listenHost(const Environment& env, int worldSize) {
  return oneNode(env, worldSize) ? "127.0.0.1" : readHostFacts().hostname;
}

// The node as the launcher counts them: this host, and its node number
// when the launcher gave one (two agents on one machine are two nodes).
std::string nodeName(const Environment& env) {
  const std::string host = readHostFacts().hostname;
  const std::optional<std::string> group = env.get("GROUP_RANK");
  return group ? host + "/" + *group : host;
}

std::chrono::milliseconds timeoutOf(const ConnectOptions& options, const CommTuning& tuning) {
  return options.timeout.value_or(tuning.timeout.value_or(std::chrono::seconds(300)));
}

std::unique_ptr<Communicator> connectGloo(const Environment& env, const ConnectOptions& options,
                                          CommTuning tuning) {
  GlooOptions gloo = std::move(tuning.gloo);
  gloo.timeout = timeoutOf(options, tuning);
  JobStore job = joinJobStore(env, options.name, gloo.timeout);
  gloo.iface = env.get("GLOO_SOCKET_IFNAME").value_or("");
  gloo.listenHost = listenHost(env, job.size);
  gloo.node = nodeName(env);
  return std::make_unique<GlooCommunicator>(job.rank, job.size, std::move(job.client),
                                            std::move(job.prefix), std::move(gloo),
                                            std::move(job.server));
}

// A DISTRUN_TRACE* mistake stops this rank before it connects (its peers
// then fail fast through the launcher) rather than after.
void checkTrace(const Environment& env) {
  if (trace::started()) return;
  const trace::TraceConfig config = trace::readTraceConfig(env);
  if (config.on()) trace::prepareFolder(config.folder, trace::kFolderName);
}

// DISTRUN_COMM_SIMD's instruction set for every type, for the whole
// process; unset: chosen per type (reduce.h).
void useReductionKernels(std::optional<Instructions> isa) {
  if (!isa) return;
  try {
    useInstructions(*isa);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("DISTRUN_COMM_SIMD={}: {}", instructionsName(*isa), e.what()));
  }
}

// The process's first communicator starts its trace and measures the
// clock offset to rank 0 (collective: every rank has the same
// DISTRUN_TRACE, as the launcher gives it); with tracing off, nothing.
void startTrace(const Environment& env, Communicator& comm) {
  constexpr int kClockRounds = 16;
  if (!trace::startProcess(env, comm.rank(), comm.size())) return;
  const Communicator::ClockOffset offset = comm.clockOffsetToRankZero(kClockRounds);
  trace::writeClockOffset(offset.offsetUs, offset.rttUs);
}

}  // namespace

std::unique_ptr<Communicator> connect(const Environment& env, const ConnectOptions& options) {
  checkTrace(env);
  CommTuning tuning = readTuning(env);
  useReductionKernels(tuning.instructions);
  std::unique_ptr<Communicator> comm;
  const std::string backend = resolveBackend(env, options.backend);
  if (backend == "gloo") {
    comm = connectGloo(env, options, std::move(tuning));
  } else if (backend == "mpi") {
    comm = connectMpi(tuning.mpiThreads);
  } else if (backend == "nccl" || backend == "rccl") {
    comm = connectNccl(env, backend, options.name, timeoutOf(options, tuning));
  } else {
    std::vector<std::string> names = availableBackends();
    if (DISTRUN_WITH_NCCL) names.insert(names.end(), {"nccl", "rccl"});
    throw UsageError(
        fmt::format("backend '{}' is not one of: auto, {}", options.backend, join(names, ", ")));
  }
  startTrace(env, *comm);
  return comm;
}

}  // namespace distrun::comm
