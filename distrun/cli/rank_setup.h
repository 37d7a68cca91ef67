#pragma once

#include <optional>
#include <string>

#include "distrun/cli/cli.h"
#include "distrun/cluster/this_task.h"

namespace distrun::cli {

// What `env` and `exec` both compute: cluster::thisTask of `env` (the
// user's environment, cluster::UserEnvironment) with the site profile
// `site` names ('none': no profile; unset: detected). Throws
// ConfigError/IoError as its parts do.
cluster::ThisTask prepareRank(const CliContext& ctx, const Environment& env,
                              const std::optional<std::string>& site);

}  // namespace distrun::cli
