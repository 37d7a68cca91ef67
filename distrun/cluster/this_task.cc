#include "distrun/cluster/this_task.h"

namespace distrun::cluster {

namespace {

RankEnvironmentOptions rankOptions(const JobLayout& layout, const HostFacts& host,
                                   const ThisTaskOptions& options) {
  RankEnvironmentOptions o;
  o.site = options.site;
  o.pickFreePort = options.pickFreePort;
  o.usableCpus = host.usableCpus;
  if (layout.worldSize == 1 && options.loneTaskStore == LoneTaskStore::kPrivate) {
    o.masterAddr = "127.0.0.1";
    o.masterPort = options.pickFreePort();
  }
  return o;
}

}  // namespace

MapEnvironment ThisTask::variables() const {
  MapEnvironment vars;
  for (const RankVariable& v : environment.variables) vars.set(v.name, v.value);
  return vars;
}

ThisTask thisTask(const Environment& env, const HostFacts& host, const ThisTaskOptions& options) {
  ThisTask task;
  task.layout = detectJobLayout(env, host);
  task.environment =
      buildRankEnvironment(task.layout, env, rankOptions(task.layout, host, options));
  return task;
}

}  // namespace distrun::cluster
