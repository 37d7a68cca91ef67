#include <exception>

#include "distrun/cluster/this_task.h"
#include "distrun/common/error.h"
#include "distrun/doctor/probe.h"

namespace distrun::doctor {

namespace {

std::string nodeName(const ProbeContext& ctx) {
  if (auto name = ctx.env.get("SLURMD_NODENAME"); name && !name->empty()) return *name;
  const cluster::JobLayout& l = ctx.layout;
  if (l.nodeRank >= 0 && static_cast<size_t>(l.nodeRank) < l.hosts.size()) {
    return l.hosts[static_cast<size_t>(l.nodeRank)];
  }
  return ctx.host.hostname;
}

}  // namespace

std::shared_ptr<ProbeContext> makeProbeContext(const Environment& env, const HostFacts& host,
                                               const DoctorOptions& options,
                                               const std::string& builtinSiteDir,
                                               const std::string& toolDir) {
  auto ctx = std::make_shared<ProbeContext>();
  ctx->options = options;
  ctx->host = host;
  ctx->toolDir = toolDir;
  ctx->site =
      cluster::selectSiteProfile(options.site, env, cluster::siteSearchPath(env, builtinSiteDir));
  ctx->env = MapEnvironment(env.all());
  try {
    cluster::ThisTask task = cluster::thisTask(env, host, {.site = ctx->site});
    ctx->layout = std::move(task.layout);
    const MapEnvironment variables = task.variables();
    for (const auto& [name, value] : variables.vars()) ctx->env.set(name, value);
  } catch (const Error& e) {
    ctx->layoutError = e.what();
    ctx->layout = cluster::detectStandalone(env, host);
  }
  ctx->node = nodeName(*ctx);
  return ctx;
}

}  // namespace distrun::doctor
