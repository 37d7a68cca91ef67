#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distrun/binding/node_topology.h"
#include "distrun/common/environment.h"

namespace distrun::cluster {

// A site profile: settings a cluster needs that no scheduler variable
// carries (which NICs the collective library must use, where per-node
// caches live). Profiles are data files, `<name>.site`, shipped in
// share/distrun/sites and searched in $DISTRUN_SITE_PATH first. The format
// (docs/sites.md):
//
//   # comment
//   description = LUMI-G: AMD MI250X nodes on Slingshot-11
//   match SLURM_CLUSTER_NAME = lumi        every match line must hold (glob)
//   set NCCL_SOCKET_IFNAME = hsn0,hsn1     ${VAR} expands at apply time
//   node-dir MIOPEN_USER_DB_PATH           a directory made on each node
//   node gpu 0 numa 3 cpus 48-55           the node type (binding/node_topology.h)
//   submit partition = standard-g          a `distrun submit` default
//   gpu-visibility = ROCR_VISIBLE_DEVICES  what --gpu-bind sets
//   bind /opt/cray                         bound into every --container
struct SiteProfile {
  struct Match {
    std::string variable;
    std::string pattern;  // glob: * and ?
  };
  struct Setting {
    std::string variable;
    std::string value;  // may hold ${VAR}
  };
  std::string name;
  std::string path;
  std::string description;
  std::vector<Match> matches;
  std::vector<Setting> settings;
  std::vector<std::string> nodeDirs;  // variables whose values are dirs
  // The node type's cores, NUMA domains and GPUs, from its `node` lines, so
  // that a job can be planned before it runs; nullopt when it has none.
  std::optional<binding::NodeTopology> node;
  // `distrun submit`'s defaults for the site's GPU nodes: partition,
  // account, qos, time, gpus-per-node (what the user leaves out).
  std::map<std::string, std::string> submitDefaults;
  // `gpu-visibility = VARIABLE`: the variable that tells a rank which GPUs
  // it sees (ROCR_VISIBLE_DEVICES on LUMI); empty: CUDA_VISIBLE_DEVICES.
  std::string gpuVisibility;
  // `bind SRC[:DST[:ro]]`: host paths every --container needs on this site
  // (Slurm's spool, the vendor's libraries), bound after the user's --bind
  // when they exist on the node.
  std::vector<std::string> binds;

  // True when the profile has match lines and all of them hold in `env`.
  bool appliesTo(const Environment& env) const;
};

// Parses a profile file's text. Throws ConfigError naming path and line.
SiteProfile parseSiteProfile(const std::string& text, const std::string& name,
                             const std::string& path);

// Where profiles are looked for, in order: each directory of
// $DISTRUN_SITE_PATH (colon-separated), then `builtinDir`.
std::vector<std::string> siteSearchPath(const Environment& env, const std::string& builtinDir);

// The names of every profile on the search path, sorted, first found wins.
std::vector<std::string> listSiteProfiles(const std::vector<std::string>& path);

// Loads profile `name` from the search path. ConfigError listing the
// available names when there is none.
SiteProfile loadSiteProfile(const std::string& name, const std::vector<std::string>& path);

// Chooses the profile: `requested` when given ("none" means no profile),
// else $DISTRUN_SITE, else the first profile (by name) whose match lines all
// hold, else "generic" when present. nullopt means no profile applies.
std::optional<SiteProfile> selectSiteProfile(const std::optional<std::string>& requested,
                                             const Environment& env,
                                             const std::vector<std::string>& path);

// What ${SLURM_JOB_ID} stands for outside a job: `distrun env --site lumi`
// on a login node, a `distrun run` on a workstation.
inline constexpr const char* kNoJobId = "nojob";

// What a profile's ${USER}, ${SLURM_NODEID} and ${SLURM_JOB_ID} stand for
// where the environment lacks them (a batch script's first line runs
// outside a step, a container may drop USER, no job at all): USER is the
// login name of this process's user (getpwuid; "uidN" when it has none),
// SLURM_NODEID is `nodeRank`, this node's place in the job (0 outside a
// step), SLURM_JOB_ID is `jobId`, else kNoJobId.
MapEnvironment siteFallbacks(int nodeRank, const std::string& jobId);

// The login name of this process's effective user; "uidN" when the user
// database has none.
const std::string& loginName();

// Expands ${VAR} in `value` from `env`. ConfigError naming the profile and
// the variable when a referenced variable is unset.
std::string expandSiteValue(const std::string& value, const Environment& env,
                            const std::string& profileName);

}  // namespace distrun::cluster
