#include "distrun/comm/connect.h"

#include <unistd.h>

#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "distrun/comm/gloo/gloo_communicator.h"
#include "distrun/comm/mpi/mpi_communicator.h"
#include "distrun/comm/reduce.h"
#include "distrun/comm/tuning.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/common/user_secret.h"
#include "distrun/config.h"
#include "distrun/rdzv/socket.h"
#include "distrun/trace/config.h"
#include "distrun/trace/trace.h"

namespace distrun::comm {

namespace {

std::string required(const Environment& env, const char* name) {
  std::optional<std::string> value = env.get(name);
  if (!value || value->empty()) {
    throw ConfigError(
        fmt::format("{} is not set: start this program with distrun run, distrun exec, "
                    "srun or mpirun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT "
                    "(docs/comm.md)",
                    name));
  }
  return *value;
}

// host:port, as in DISTRUN_STORE.
std::pair<std::string, int> splitEndpoint(const std::string& text, const char* what) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw ConfigError(fmt::format("{}='{}' is not HOST:PORT", what, text));
  }
  return {text.substr(0, colon), static_cast<int>(parseCount(text.substr(colon + 1), what, 65535))};
}

// The key space of this communicator in the store (the rule: connect.h).
std::string storePrefix(const Environment& env, const std::string& name, int size,
                        rdzv::StoreClient& store) {
  const std::string group = fmt::format(
      "comm/{}/{}/{}/{}",
      env.get("DISTRUN_RUN_ID").value_or(env.get("TORCHELASTIC_RUN_ID").value_or("none")),
      env.get("TORCHELASTIC_RESTART_COUNT").value_or("0"), name, size);
  const long long ticket = store.add(group + "/joined", 1);
  return fmt::format("{}#{}", group, (ticket - 1) / size);
}

bool oneNode(const Environment& env, int worldSize) {
  auto local = env.get("LOCAL_WORLD_SIZE");
  return local && *local == std::to_string(worldSize);
}

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

// The token of a store that rank 0 hosts at MASTER_ADDR:MASTER_PORT:
// DISTRUN_TOKEN, else the keyed hash of the meeting point with the user's
// secret, which nobody else can compute (docs/security.md).
std::string ownStoreToken(const Environment& env, const std::string& host, int port, int size) {
  if (auto token = env.get("DISTRUN_TOKEN")) return *token;
  return derivedToken(env, fmt::format("exec:{}:{}/{}", host, port, size));
}

std::unique_ptr<Communicator> connectGloo(const Environment& env, const ConnectOptions& options,
                                          CommTuning tuning) {
  const int rank = static_cast<int>(parseCount(required(env, "RANK"), "RANK"));
  const int size = static_cast<int>(parseCount(required(env, "WORLD_SIZE"), "WORLD_SIZE"));
  if (size < 1 || rank >= size) {
    // The hint is cluster::kClearStaleHint's words (comm does not depend on cluster).
    throw ConfigError(
        fmt::format("RANK={} is not below WORLD_SIZE={}; if left from an earlier shell or job, "
                    "clear them: eval \"$(distrun env --unset)\"",
                    rank, size));
  }
  GlooOptions gloo = std::move(tuning.gloo);
  gloo.timeout = options.timeout.value_or(tuning.timeout.value_or(std::chrono::seconds(300)));
  gloo.iface = env.get("GLOO_SOCKET_IFNAME").value_or("");
  gloo.listenHost = listenHost(env, size);
  gloo.node = nodeName(env);

  std::unique_ptr<rdzv::StoreServer> server;
  std::string host;
  int port = 0;
  std::string token;
  if (auto store = env.get("DISTRUN_STORE")) {
    std::tie(host, port) = splitEndpoint(*store, "DISTRUN_STORE");
    token = required(env, "DISTRUN_TOKEN");
  } else {
    host = required(env, "MASTER_ADDR");
    port = static_cast<int>(parseCount(required(env, "MASTER_PORT"), "MASTER_PORT", 65535));
    token = ownStoreToken(env, host, port, size);
    if (rank == 0) {
      server = std::make_unique<rdzv::StoreServer>(
          rdzv::storeBindAddress(host, !oneNode(env, size)), port, token);
    }
  }
  auto client = std::make_unique<rdzv::StoreClient>(host, port, token, gloo.timeout);
  std::string prefix = storePrefix(env, options.name, size, *client);
  return std::make_unique<GlooCommunicator>(rank, size, std::move(client), std::move(prefix),
                                            std::move(gloo), std::move(server));
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
  } else {
    throw UsageError(fmt::format("backend '{}' is not one of: auto, {}", options.backend,
                                 join(availableBackends(), ", ")));
  }
  startTrace(env, *comm);
  return comm;
}

}  // namespace distrun::comm
