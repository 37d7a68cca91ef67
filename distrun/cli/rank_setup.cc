#include "distrun/cli/rank_setup.h"

namespace distrun::cli {

cluster::ThisTask prepareRank(const CliContext& ctx, const Environment& env,
                              const std::optional<std::string>& site) {
  cluster::ThisTaskOptions options;
  options.site =
      cluster::selectSiteProfile(site, env, cluster::siteSearchPath(env, ctx.builtinSiteDir));
  return cluster::thisTask(env, ctx.hostFacts(), options);
}

}  // namespace distrun::cli
