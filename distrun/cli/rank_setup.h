#pragma once

#include <optional>
#include <string>

#include "distrun/cli/cli.h"
#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/rank_env.h"

namespace distrun::cli {

// What `env` and `exec` both compute: this task's layout and environment.
struct RankSetup {
  cluster::JobLayout layout;
  cluster::RankEnvironment environment;
};

// Detects the layout, selects the site profile (`site`, or detected) and
// builds the environment. Throws ConfigError/IoError as its parts do.
RankSetup prepareRank(const CliContext& ctx,
                      const std::optional<std::string>& site);

}  // namespace distrun::cli
