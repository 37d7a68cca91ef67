#include "distrun/comm/job_store.h"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/user_secret.h"
#include "distrun/rdzv/socket.h"

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

// The token of a store that rank 0 hosts at MASTER_ADDR:MASTER_PORT:
// DISTRUN_TOKEN, else the keyed hash of the meeting point with the user's
// secret, which nobody else can compute (docs/security.md).
std::string ownStoreToken(const Environment& env, const std::string& host, int port, int size) {
  if (auto token = env.get("DISTRUN_TOKEN")) return *token;
  return derivedToken(env, fmt::format("exec:{}:{}/{}", host, port, size));
}

void readRankAndSize(const Environment& env, JobStore& job) {
  job.rank = static_cast<int>(parseCount(required(env, "RANK"), "RANK"));
  job.size = static_cast<int>(parseCount(required(env, "WORLD_SIZE"), "WORLD_SIZE"));
  if (job.size < 1 || job.rank >= job.size) {
    // The hint is cluster::kClearStaleHint's words (comm does not depend on cluster).
    throw ConfigError(
        fmt::format("RANK={} is not below WORLD_SIZE={}; if left from an earlier shell or job, "
                    "clear them: eval \"$(distrun env --unset)\"",
                    job.rank, job.size));
  }
}

}  // namespace

bool oneNode(const Environment& env, int worldSize) {
  auto local = env.get("LOCAL_WORLD_SIZE");
  return local && *local == std::to_string(worldSize);
}

JobStore joinJobStore(const Environment& env, const std::string& name,
                      std::chrono::milliseconds timeout) {
  JobStore job;
  readRankAndSize(env, job);
  std::string host;
  int port = 0;
  std::string token;
  if (auto store = env.get("DISTRUN_STORE")) {
    std::tie(host, port) = splitEndpoint(*store, "DISTRUN_STORE");
    token = required(env, "DISTRUN_TOKEN");
  } else {
    host = required(env, "MASTER_ADDR");
    port = static_cast<int>(parseCount(required(env, "MASTER_PORT"), "MASTER_PORT", 65535));
    token = ownStoreToken(env, host, port, job.size);
    if (job.rank == 0) {
      job.server = std::make_unique<rdzv::StoreServer>(
          rdzv::storeBindAddress(host, !oneNode(env, job.size)), port, token);
    }
  }
  job.client = std::make_unique<rdzv::StoreClient>(host, port, token, timeout);
  job.prefix = storePrefix(env, name, job.size, *job.client);
  return job;
}

}  // namespace distrun::comm
