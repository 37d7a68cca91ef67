#include "distrun/cluster/rank_env.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/cluster/leftovers.h"
#include "distrun/cluster/master_port.h"
#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

using Source = RankVariable::Source;

// Adds variables in order and lets site values see earlier ones.
class RankEnvironmentBuilder {
 public:
  explicit RankEnvironmentBuilder(const Environment& user) : user_(user) {}

  // A value that describes the task itself: the scheduler is right.
  void identity(const std::string& name, const std::string& value) {
    std::optional<std::string> had = user_.get(name);
    if (had && *had != value) {
      add({name, value, Source::kReplaced, *had});
    } else {
      add({name, value, Source::kDerived, ""});
    }
  }

  // A setting: the user's value wins over `fallback()`. A name already
  // set (a site profile repeating a contract variable) keeps its value.
  template <typename Fallback>
  void setting(const std::string& name, Fallback fallback, Source source = Source::kDerived) {
    if (built_.has(name)) return;
    if (std::optional<std::string> had = user_.get(name)) {
      add({name, *had, Source::kKept, ""});
    } else {
      add({name, fallback(), source, ""});
    }
  }

  // The user's environment overlaid with what was built so far.
  OverlayEnvironment view() const { return OverlayEnvironment(user_, built_); }

  bool userHas(const std::string& name) const { return user_.has(name); }
  RankEnvironment& result() { return result_; }

 private:
  // A later identity value for a name replaces the earlier one in place.
  void add(RankVariable variable) {
    built_.set(variable.name, variable.value);
    for (RankVariable& v : result_.variables) {
      if (v.name == variable.name) {
        v = std::move(variable);
        return;
      }
    }
    result_.variables.push_back(std::move(variable));
  }

  const Environment& user_;
  MapEnvironment built_;
  RankEnvironment result_;
};

// The variable a world without a job id took its size from.
std::string worldSizeVariable(Scheduler scheduler) {
  switch (scheduler) {
    case Scheduler::kOpenMpi:
      return "OMPI_COMM_WORLD_SIZE";
    case Scheduler::kMpich:
      return "PMI_SIZE";
    default:
      return "WORLD_SIZE";
  }
}

int masterPort(const JobLayout& layout, const RankEnvironmentOptions& options) {
  if (!layout.jobId.empty()) {
    return derivedMasterPort(layout.jobId, layout.stepId);
  }
  if (layout.worldSize > 1) {
    throw ConfigError(fmt::format(
        "MASTER_PORT is not set and there is no job id to derive it from: set MASTER_PORT for "
        "the {}-process world {}={} describes{}",
        layout.worldSize, worldSizeVariable(layout.scheduler), layout.worldSize, kClearStaleHint));
  }
  DISTRUN_ENFORCE(options.pickFreePort, "no pickFreePort given");
  return options.pickFreePort();
}

// A MASTER_PORT the user set, which every task would keep, is a port.
void checkUserPort(const Environment& user) {
  std::optional<std::string> port = user.get("MASTER_PORT");
  if (!port) return;
  try {
    parseCount(*port, "MASTER_PORT", 65535);
  } catch (const ConfigError& e) {
    throw ConfigError(e.what() + std::string(kClearStaleHint));
  }
}

int ompThreads(const JobLayout& layout, const RankEnvironmentOptions& options) {
  if (layout.cpusPerTask) return std::max(*layout.cpusPerTask, 1);
  return std::max(options.usableCpus / std::max(layout.localWorldSize, 1), 1);
}

void addContract(const JobLayout& layout, const RankEnvironmentOptions& options,
                 RankEnvironmentBuilder& b) {
  auto str = [](int v) { return std::to_string(v); };
  b.identity("RANK", str(layout.rank));
  b.identity("LOCAL_RANK", str(layout.localRank));
  b.identity("WORLD_SIZE", str(layout.worldSize));
  b.identity("LOCAL_WORLD_SIZE", str(layout.localWorldSize));
  b.identity("GROUP_RANK", str(layout.nodeRank));
  b.identity("GROUP_WORLD_SIZE", str(layout.numNodes));
  b.identity("ROLE_RANK", str(layout.rank));
  b.identity("ROLE_WORLD_SIZE", str(layout.worldSize));
  if (options.roleName) {
    b.identity("ROLE_NAME", *options.roleName);
  } else {
    b.setting("ROLE_NAME", [] { return std::string("default"); });
  }
  if (options.masterAddr) {
    b.identity("MASTER_ADDR", *options.masterAddr);
  } else {
    b.setting("MASTER_ADDR", [&] { return layout.masterHost; });
  }
  if (options.masterPort) {
    b.identity("MASTER_PORT", str(*options.masterPort));
  } else {
    b.result().masterPortDerived = !b.userHas("MASTER_PORT");
    b.setting("MASTER_PORT", [&] { return str(masterPort(layout, options)); });
  }
  if (options.runId) {
    b.identity("TORCHELASTIC_RUN_ID", *options.runId);
  } else {
    b.setting("TORCHELASTIC_RUN_ID", [&] { return defaultRunId(layout); });
  }
  b.setting("TORCHELASTIC_RESTART_COUNT", [&] { return str(options.restartCount); });
  b.setting("TORCHELASTIC_MAX_RESTARTS", [&] { return str(options.maxRestarts); });
  b.identity("TORCHELASTIC_USE_AGENT_STORE", "False");
  b.setting("TORCH_NCCL_ASYNC_ERROR_HANDLING", [] { return std::string("1"); });
  b.setting("OMP_NUM_THREADS", [&] { return str(ompThreads(layout, options)); });
}

// The index into the visible device list this task should use: its own
// device when Slurm already narrowed the list to one, else its local rank,
// and where the tasks outnumber the devices the one the binding plan shares
// with its neighbours (ranks / devices local ranks each, as planBinding).
void addDevice(const JobLayout& layout, RankEnvironmentBuilder& b) {
  if (layout.visibleDevices.empty()) return;
  int count = static_cast<int>(layout.visibleDevices.size());
  int sharing = std::max(1, layout.localWorldSize / count);
  int index = std::min(layout.localRank / sharing, count - 1);
  b.identity("DISTRUN_LOCAL_DEVICE", std::to_string(index));
}

// The values are expanded in the user's environment, what was built so
// far, and under both the fallbacks for what a step would have set.
void addSite(const SiteProfile& site, const JobLayout& layout, RankEnvironmentBuilder& b) {
  const MapEnvironment fallbacks = siteFallbacks(layout.nodeRank, layout.jobId);
  for (const SiteProfile::Setting& s : site.settings) {
    auto expand = [&] {
      const OverlayEnvironment known = b.view();
      return expandSiteValue(s.value, OverlayEnvironment(fallbacks, known), site.name);
    };
    b.setting(s.variable, expand, Source::kSite);
  }
}

void addNodeDirs(const SiteProfile& site, RankEnvironment& env) {
  for (const std::string& variable : site.nodeDirs) {
    const RankVariable* v = env.find(variable);
    if (v == nullptr) {
      throw ConfigError(
          fmt::format("site profile {}: node-dir {} names a variable the profile does "
                      "not set",
                      site.name, variable));
    }
    env.nodeDirs.push_back(v->value);
  }
}

}  // namespace

const RankVariable* RankEnvironment::find(const std::string& name) const {
  for (const RankVariable& v : variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

RankEnvironment buildRankEnvironment(const JobLayout& layout, const Environment& user,
                                     const RankEnvironmentOptions& options) {
  if (!options.masterPort) checkUserPort(user);
  RankEnvironmentBuilder b(user);
  addContract(layout, options, b);
  addDevice(layout, b);
  b.identity("DISTRUN_SCHEDULER", schedulerName(layout.scheduler));
  for (const auto& [name, value] : options.launcherVariables) {
    b.identity(name, value);
  }
  if (options.site) {
    b.identity("DISTRUN_SITE", options.site->name);
    addSite(*options.site, layout, b);
  }
  RankEnvironment env = std::move(b.result());
  if (options.site) {
    env.siteName = options.site->name;
    addNodeDirs(*options.site, env);
  }
  env.notes = layout.notes;
  return env;
}

void makeNodeDirs(const RankEnvironment& env) {
  for (const std::string& dir : env.nodeDirs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec && !std::filesystem::is_directory(dir)) {
      throw IoError(fmt::format("site profile {}: cannot create node directory '{}': {}",
                                env.siteName, dir, ec.message()));
    }
  }
}

}  // namespace distrun::cluster
