#include "distrun/launch/run_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"

namespace distrun::launch {
namespace {

using ::testing::ElementsAre;
using Vars = std::map<std::string, std::string>;

AgentConfig resolve(const RunOptions& o, const Vars& vars = {}, int gpus = 0) {
  MapEnvironment env(vars);
  RunContext ctx{env,
                 HostFacts{"nodeA", 4},
                 {0, 1, 2, 3},
                 std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                 gpus};
  return resolveAgentConfig(o, ctx);
}

RunOptions withProgram(std::vector<std::string> program) {
  RunOptions o;
  o.program = std::move(program);
  return o;
}

std::string usageError(const RunOptions& o, const Vars& vars = {}) {
  try {
    resolve(o, vars);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

TEST(WorkerCommandTest, PythonOnlyForPythonPrograms) {
  MapEnvironment env;
  EXPECT_THAT(workerCommand(withProgram({"train.py", "--lr", "1"}), env),
              ElementsAre("python3", "-u", "train.py", "--lr", "1"));
  RunOptions m = withProgram({"pkg.train"});
  m.module = true;
  EXPECT_THAT(workerCommand(m, env), ElementsAre("python3", "-u", "-m", "pkg.train"));
  EXPECT_THAT(workerCommand(withProgram({"./a.out", "x"}), env), ElementsAre("./a.out", "x"));
  RunOptions np = withProgram({"tool.py"});
  np.noPython = true;
  EXPECT_THAT(workerCommand(np, env), ElementsAre("tool.py"));
  MapEnvironment custom({{"DISTRUN_PYTHON", "/usr/bin/python3"}});
  EXPECT_EQ(workerCommand(withProgram({"t.py"}), custom).front(), "/usr/bin/python3");
}

TEST(ResolveTest, StandaloneByDefault) {
  RunOptions o = withProgram({"true"});
  o.nprocPerNode = "3";
  AgentConfig c = resolve(o);
  EXPECT_EQ(c.layout.numNodes, 1);
  EXPECT_EQ(c.layout.localWorldSize, 3);
  EXPECT_EQ(c.storeHost, "127.0.0.1");
  EXPECT_EQ(c.storePort, 0);
  EXPECT_EQ(c.token.size(), 32u);
  EXPECT_EQ(c.site->name, "generic");
}

TEST(ResolveTest, NprocForms) {
  RunOptions o = withProgram({"true"});
  o.nprocPerNode = "cpu";
  EXPECT_EQ(resolve(o).layout.localWorldSize, 4);
  o.nprocPerNode = "auto";
  EXPECT_EQ(resolve(o, {}, 2).layout.localWorldSize, 2);
  o.nprocPerNode = "gpu";
  EXPECT_EQ(usageError(o), "--nproc-per-node gpu: this node has no visible GPU");
  o.nprocPerNode = "0";
  EXPECT_EQ(usageError(o), "--nproc-per-node 0: expected a positive number, cpu, gpu or auto");
}

Vars slurmAgent(int node) {
  return {{"SLURM_JOB_ID", "77"},
          {"SLURM_STEP_ID", "2"},
          {"SLURM_PROCID", std::to_string(node)},
          {"SLURM_NODEID", std::to_string(node)},
          {"SLURM_LOCALID", "0"},
          {"SLURM_STEP_NUM_TASKS", "2"},
          {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
          {"SLURM_STEP_NODELIST", "gpu[01-02]"}};
}

TEST(ResolveTest, SlurmNeedsNoFlags) {
  AgentConfig c = resolve(withProgram({"true"}), slurmAgent(1));
  EXPECT_EQ(c.layout.numNodes, 2);
  EXPECT_EQ(c.layout.nodeRank, 1);
  EXPECT_EQ(c.storeHost, "gpu01");
  EXPECT_EQ(c.storePort, cluster::derivedMasterPort("77", "2"));
  EXPECT_EQ(c.host, "gpu02");
  EXPECT_EQ(c.runId, "77.2");
  AgentConfig other = resolve(withProgram({"true"}), slurmAgent(0));
  EXPECT_EQ(other.token, c.token) << "every node derives the same token";
}

TEST(ResolveTest, TheLayoutIsTheNodesPlaceAndWorkersPerNode) {
  // Slurm's layout is the agent's (one task here); --nproc-per-node sets
  // the workers per node in the same layout, which keeps the job's ids.
  RunOptions o = withProgram({"true"});
  o.nprocPerNode = "3";
  AgentConfig c = resolve(o, slurmAgent(1));
  EXPECT_EQ(c.layout.scheduler, cluster::Scheduler::kSlurm);
  EXPECT_EQ(c.layout.jobId, "77");
  EXPECT_EQ(c.layout.numNodes, 2);
  EXPECT_EQ(c.layout.nodeRank, 1);
  EXPECT_EQ(c.layout.localWorldSize, 3);
  // By hand, the flags are the layout's numbers.
  o.nnodes = "4";
  o.nodeRank = 3;
  o.rdzvEndpoint = "head";
  AgentConfig byHand = resolve(o, {{"DISTRUN_TOKEN", "s"}});
  EXPECT_EQ(byHand.layout.numNodes, 4);
  EXPECT_EQ(byHand.layout.nodeRank, 3);
  EXPECT_EQ(byHand.layout.localWorldSize, 3);
  EXPECT_EQ(byHand.storePort, 29400);
}

TEST(ResolveTest, SlurmWithSeveralTasksPerNodeIsRefused) {
  Vars v = slurmAgent(0);
  v["SLURM_STEP_NUM_TASKS"] = "4";
  v["SLURM_STEP_TASKS_PER_NODE"] = "2(x2)";
  EXPECT_EQ(usageError(withProgram({"true"}), v),
            "distrun run must be the only task on its node, but this Slurm step "
            "has 2 tasks on node gpu01: use srun --ntasks-per-node=1 and "
            "--nproc-per-node for the workers");
}

TEST(ResolveTest, ExplicitNodesNeedEndpointRankAndToken) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "2";
  EXPECT_EQ(usageError(o), "--nnodes 2 needs --node-rank on every node");
  o.nodeRank = 1;
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--nnodes 2 needs --rdzv-endpoint"));
  o.rdzvEndpoint = "head:1234";
  EXPECT_THAT(usageError(o),
              ::testing::StartsWith("a run of several nodes outside Slurm needs DISTRUN_TOKEN"));
  AgentConfig c = resolve(o, {{"DISTRUN_TOKEN", "s3cret"}});
  EXPECT_EQ(c.storeHost, "head");
  EXPECT_EQ(c.storePort, 1234);
  EXPECT_EQ(c.layout.nodeRank, 1);
  EXPECT_EQ(c.token, "s3cret");
  o.nodeRank = 2;
  EXPECT_EQ(usageError(o, {{"DISTRUN_TOKEN", "s"}}),
            "--node-rank 2 contradicts --nnodes 2: expected 0 <= node rank < nodes");
}

TEST(ResolveTest, ElasticRangesAreRefused) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "1:4";
  EXPECT_EQ(usageError(o),
            "--nnodes 1:4: expected a node count N (or N:N); distrun starts a "
            "fixed set of nodes, elastic MIN:MAX ranges are not supported");
  o.nnodes = "1:1";
  EXPECT_EQ(resolve(o).layout.numNodes, 1);
}

TEST(ResolveTest, RdzvConfJoinTimeoutAndLogs) {
  RunOptions o = withProgram({"true"});
  o.rdzvConf = "join_timeout=42,read_timeout=9";
  o.tee = "3";
  o.localRanksFilter = "0,2";
  AgentConfig c = resolve(o);
  EXPECT_EQ(c.joinTimeout, std::chrono::seconds(42));
  EXPECT_EQ(c.logDir, "/tmp/distrun-logs");
  EXPECT_EQ(*c.consoleRanks, (std::set<int>{0, 2}));
  o.logPrefix = "{nope}";
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--log-prefix '{nope}'"));
}

}  // namespace
}  // namespace distrun::launch
