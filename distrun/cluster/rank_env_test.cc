#include "distrun/cluster/rank_env.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"

namespace distrun::cluster {
namespace {

using Source = RankVariable::Source;

JobLayout slurmTask() {
  JobLayout l;
  l.scheduler = Scheduler::kSlurm;
  l.rank = 5;
  l.worldSize = 7;
  l.localRank = 1;
  l.localWorldSize = 2;
  l.nodeRank = 2;
  l.numNodes = 4;
  l.masterHost = "gpu-07";
  l.jobId = "4242";
  l.stepId = "3";
  return l;
}

RankEnvironmentOptions options() {
  RankEnvironmentOptions o;
  o.pickFreePort = [] { return 41000; };
  o.usableCpus = 8;
  return o;
}

std::string value(const RankEnvironment& env, const std::string& name) {
  const RankVariable* v = env.find(name);
  return v ? v->value : "<unset>";
}

TEST(RankEnvironmentTest, TorchrunContractFromLayout) {
  RankEnvironment env = buildRankEnvironment(slurmTask(), MapEnvironment(), options());
  std::vector<std::string> names;
  for (const RankVariable& v : env.variables) names.push_back(v.name);
  EXPECT_THAT(names,
              ::testing::ElementsAre(
                  "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                  "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR",
                  "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                  "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
                  "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS", "DISTRUN_SCHEDULER"));
  EXPECT_EQ(value(env, "RANK"), "5");
  EXPECT_EQ(value(env, "LOCAL_RANK"), "1");
  EXPECT_EQ(value(env, "WORLD_SIZE"), "7");
  EXPECT_EQ(value(env, "LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(value(env, "GROUP_RANK"), "2");
  EXPECT_EQ(value(env, "GROUP_WORLD_SIZE"), "4");
  EXPECT_EQ(value(env, "ROLE_RANK"), "5");
  EXPECT_EQ(value(env, "ROLE_NAME"), "default");
  EXPECT_EQ(value(env, "MASTER_ADDR"), "gpu-07");
  EXPECT_EQ(value(env, "MASTER_PORT"), std::to_string(derivedMasterPort("4242", "3")));
  EXPECT_EQ(value(env, "TORCHELASTIC_RUN_ID"), "4242.3");
  EXPECT_EQ(value(env, "TORCHELASTIC_USE_AGENT_STORE"), "False");
  EXPECT_EQ(value(env, "OMP_NUM_THREADS"), "4");  // 8 CPUs / 2 local tasks
  EXPECT_EQ(value(env, "DISTRUN_SCHEDULER"), "slurm");
  EXPECT_TRUE(env.masterPortDerived);
}

TEST(RankEnvironmentTest, UserSettingsWinIdentityIsReplaced) {
  MapEnvironment user({{"MASTER_PORT", "6000"},
                       {"MASTER_ADDR", "nid001-hsn0"},
                       {"OMP_NUM_THREADS", "7"},
                       {"RANK", "0"},
                       {"WORLD_SIZE", "7"}});
  RankEnvironment env = buildRankEnvironment(slurmTask(), user, options());
  EXPECT_EQ(value(env, "MASTER_PORT"), "6000");
  EXPECT_EQ(env.find("MASTER_PORT")->source, Source::kKept);
  EXPECT_EQ(value(env, "MASTER_ADDR"), "nid001-hsn0");
  EXPECT_EQ(value(env, "OMP_NUM_THREADS"), "7");
  EXPECT_FALSE(env.masterPortDerived);
  const RankVariable* rank = env.find("RANK");
  EXPECT_EQ(rank->value, "5");
  EXPECT_EQ(rank->source, Source::kReplaced);
  EXPECT_EQ(rank->previous, "0");
  EXPECT_EQ(env.find("WORLD_SIZE")->source, Source::kDerived);  // same value
}

TEST(RankEnvironmentTest, CpusPerTaskSetsThreads) {
  JobLayout l = slurmTask();
  l.cpusPerTask = 16;
  EXPECT_EQ(value(buildRankEnvironment(l, MapEnvironment(), options()), "OMP_NUM_THREADS"), "16");
}

TEST(RankEnvironmentTest, LocalDeviceFollowsVisibleDevices) {
  JobLayout l = slurmTask();
  l.visibleDevices = {"3"};  // Slurm bound one GPU to this task
  EXPECT_EQ(value(buildRankEnvironment(l, MapEnvironment(), options()), "DISTRUN_LOCAL_DEVICE"),
            "0");
  l.visibleDevices = {"0", "1", "2", "3"};
  EXPECT_EQ(value(buildRankEnvironment(l, MapEnvironment(), options()), "DISTRUN_LOCAL_DEVICE"),
            "1");
  // 8 tasks on 4 GPUs share them as the binding plan does: local ranks 2
  // and 3 on GPU 1 (their cores are GPU 1's).
  l.localWorldSize = 8;
  l.localRank = 3;
  EXPECT_EQ(value(buildRankEnvironment(l, MapEnvironment(), options()), "DISTRUN_LOCAL_DEVICE"),
            "1");
  l.localRank = 7;
  EXPECT_EQ(value(buildRankEnvironment(l, MapEnvironment(), options()), "DISTRUN_LOCAL_DEVICE"),
            "3");
}

TEST(RankEnvironmentTest, StandalonePortIsPickedFreeOrRequired) {
  JobLayout one;
  EXPECT_EQ(value(buildRankEnvironment(one, MapEnvironment(), options()), "MASTER_PORT"), "41000");
  JobLayout two;
  two.worldSize = 2;
  try {
    buildRankEnvironment(two, MapEnvironment(), options());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "MASTER_PORT is not set and there is no job id to derive it "
                 "from: set MASTER_PORT for the 2-process world WORLD_SIZE=2 describes; if left "
                 "from an earlier shell or job, clear them: eval \"$(distrun env --unset)\"");
  }
  two.scheduler = Scheduler::kOpenMpi;
  try {
    buildRankEnvironment(two, MapEnvironment(), options());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("world OMPI_COMM_WORLD_SIZE=2 describes"));
  }
}

SiteProfile lumiLike() {
  return parseSiteProfile(
      "set NCCL_SOCKET_IFNAME = hsn0,hsn1\n"
      "set MIOPEN_USER_DB_PATH = /tmp/${USER}-miopen-${SLURM_NODEID}\n"
      "set MIOPEN_CUSTOM_CACHE_DIR = ${MIOPEN_USER_DB_PATH}\n"
      "node-dir MIOPEN_USER_DB_PATH\n",
      "lumi", "lumi.site");
}

TEST(RankEnvironmentTest, SiteSettingsExpandAndUserWins) {
  RankEnvironmentOptions o = options();
  o.site = lumiLike();
  MapEnvironment user({{"USER", "ada"}, {"SLURM_NODEID", "2"}, {"NCCL_SOCKET_IFNAME", "ib0"}});
  RankEnvironment env = buildRankEnvironment(slurmTask(), user, o);
  EXPECT_EQ(env.siteName, "lumi");
  EXPECT_EQ(value(env, "DISTRUN_SITE"), "lumi");
  EXPECT_EQ(value(env, "NCCL_SOCKET_IFNAME"), "ib0");
  EXPECT_EQ(env.find("NCCL_SOCKET_IFNAME")->source, Source::kKept);
  EXPECT_EQ(value(env, "MIOPEN_USER_DB_PATH"), "/tmp/ada-miopen-2");
  EXPECT_EQ(env.find("MIOPEN_USER_DB_PATH")->source, Source::kSite);
  EXPECT_EQ(value(env, "MIOPEN_CUSTOM_CACHE_DIR"), "/tmp/ada-miopen-2");
  EXPECT_THAT(env.nodeDirs, ::testing::ElementsAre("/tmp/ada-miopen-2"));
}

// A batch script's first line runs outside a step: no SLURM_NODEID, and
// maybe no USER. The profile still applies: the login name of this
// process's user, and the node's place in the job (siteFallbacks).
TEST(RankEnvironmentTest, SiteValuesFallBackForUserAndNodeId) {
  RankEnvironmentOptions o = options();
  o.site = lumiLike();
  RankEnvironment env = buildRankEnvironment(slurmTask(), MapEnvironment(), o);
  const std::string dir = "/tmp/" + loginName() + "-miopen-2";
  EXPECT_EQ(value(env, "MIOPEN_USER_DB_PATH"), dir);
  EXPECT_THAT(env.nodeDirs, ::testing::ElementsAre(dir));
  EXPECT_EQ(env.find("USER"), nullptr);  // fallbacks expand values, are not set
  EXPECT_EQ(env.find("SLURM_NODEID"), nullptr);
  JobLayout alone;
  alone.jobId = "1";
  env = buildRankEnvironment(alone, MapEnvironment({{"USER", "ada"}}), o);
  EXPECT_EQ(value(env, "MIOPEN_USER_DB_PATH"), "/tmp/ada-miopen-0");
}

TEST(RankEnvironmentTest, SiteValueWithUnsetVariableIsAConfigError) {
  RankEnvironmentOptions o = options();
  o.site = parseSiteProfile("set CACHE = /tmp/${PROJECT}\n", "lumi", "lumi.site");
  try {
    buildRankEnvironment(slurmTask(), MapEnvironment({{"USER", "ada"}}), o);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "site profile lumi: '/tmp/${PROJECT}' uses ${PROJECT}, which is not set");
  }
}

// `distrun exec` and `distrun run` create the node folders with this.
TEST(RankEnvironmentTest, NodeDirsAreCreatedWithTheirParentsAndMayExist) {
  const std::string root = ::testing::TempDir() + "/node_dirs_" + std::to_string(::getpid());
  RankEnvironment env;
  env.siteName = "lumi";
  env.nodeDirs = {root + "/a/b", root + "/a/b"};
  makeNodeDirs(env);
  EXPECT_TRUE(std::filesystem::is_directory(root + "/a/b"));
  env.nodeDirs = {"/dev/null/cache"};
  try {
    makeNodeDirs(env);
    FAIL();
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(),
                ::testing::StartsWith(
                    "site profile lumi: cannot create node directory '/dev/null/cache': "));
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace distrun::cluster
