#include "distrun/cli/rank_setup.h"

namespace distrun::cli {

cluster::ThisTask prepareRank(const CliContext& ctx, const std::optional<std::string>& site) {
  cluster::ThisTaskOptions options;
  options.site = cluster::selectSiteProfile(site, ctx.env,
                                            cluster::siteSearchPath(ctx.env, ctx.builtinSiteDir));
  return cluster::thisTask(ctx.env, ctx.hostFacts(), options);
}

}  // namespace distrun::cli
