#include "distrun/cli/rank_setup.h"

namespace distrun::cli {

RankSetup prepareRank(const CliContext& ctx,
                      const std::optional<std::string>& site) {
  HostFacts host = ctx.hostFacts();
  RankSetup setup;
  setup.layout = cluster::detectJobLayout(ctx.env, host);
  cluster::RankEnvironmentOptions options;
  options.site = cluster::selectSiteProfile(
      site, ctx.env, cluster::siteSearchPath(ctx.env, ctx.builtinSiteDir));
  options.pickFreePort = pickFreeTcpPort;
  options.usableCpus = host.usableCpus;
  setup.environment =
      cluster::buildRankEnvironment(setup.layout, ctx.env, options);
  return setup;
}

}  // namespace distrun::cli
