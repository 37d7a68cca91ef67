#include "distrun/launch/run_options.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"
#include "distrun/common/user_secret.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::launch {
namespace {

using ::testing::ElementsAre;
using Vars = std::map<std::string, std::string>;

AgentConfig resolve(const RunOptions& o, const Vars& vars = {}, int gpus = 0) {
  MapEnvironment env(vars);
  RunContext ctx{env,          HostFacts{"nodeA", 4},
                 {0, 1, 2, 3}, std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                 gpus,         std::nullopt};
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

// Through the torchrun link, as torchrun: any PROGRAM is a Python script
// (a training script without .py, the cause of "Permission denied" before),
// unless --no-python; -m still runs a module.
TEST(WorkerCommandTest, AsTorchrunEveryProgramRunsUnderPythonButWithNoPython) {
  MapEnvironment env;
  RunOptions o = withProgram({"train", "--lr", "1"});
  o.pythonByDefault = true;
  EXPECT_THAT(workerCommand(o, env), ElementsAre("python3", "-u", "train", "--lr", "1"));
  o.noPython = true;
  EXPECT_THAT(workerCommand(o, env), ElementsAre("train", "--lr", "1"));
  RunOptions m = withProgram({"pkg.train"});
  m.pythonByDefault = true;
  m.module = true;
  EXPECT_THAT(workerCommand(m, env), ElementsAre("python3", "-u", "-m", "pkg.train"));
}

TEST(WorkerCommandTest, ThePythonAndWhereItCameFrom) {
  RunOptions o = withProgram({"train.py"});
  AgentConfig c = resolve(o);
  EXPECT_EQ(c.python, "python3");
  EXPECT_EQ(c.pythonSource, "the first python3 on PATH");
  EXPECT_EQ(c.pythonScript, "train.py");
  EXPECT_EQ(resolve(o, {{"DISTRUN_PYTHON", "/opt/py/bin/python"}}).pythonSource,
            "from DISTRUN_PYTHON");
  EXPECT_EQ(resolve(o, {{"PYTHON_EXEC", "/opt/py/bin/python"}}).pythonSource, "from PYTHON_EXEC");
  o.python = "/usr/bin/python3";
  AgentConfig flag = resolve(o, {{"DISTRUN_PYTHON", "/opt/py/bin/python"}});
  EXPECT_EQ(flag.python, "/usr/bin/python3");
  EXPECT_EQ(flag.pythonSource, "from --python");
  EXPECT_EQ(resolve(withProgram({"./a.out"})).python, "") << "not a Python program";
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
  EXPECT_EQ(usageError(o), "--nproc-per-node 0: expected a positive number, cpu, gpu, xpu or auto");
  o.nprocPerNode = "xpu";
  EXPECT_EQ(usageError(o), "--nproc-per-node xpu: this node has no visible GPU");
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
          {"SLURM_STEP_NODELIST", "gpu[01-02]"},
          {"XDG_CONFIG_HOME", ::testing::TempDir() + "/run-options-config"}};
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

// Without DISTRUN_TOKEN, a Slurm step's token is the keyed hash of its ids
// with the user's secret: nobody who knows the ids can compute it
// (docs/security.md); another step has another token.
TEST(ResolveTest, ASlurmStepsTokenIsDerivedFromTheUsersSecret) {
  Vars vars = slurmAgent(0);
  AgentConfig c = resolve(withProgram({"true"}), vars);
  EXPECT_EQ(c.token, derivedToken(MapEnvironment(vars), "slurm:77:2"));
  vars["SLURM_STEP_ID"] = "3";
  EXPECT_NE(resolve(withProgram({"true"}), vars).token, c.token);
  vars["DISTRUN_TOKEN"] = "by-hand";
  EXPECT_EQ(resolve(withProgram({"true"}), vars).token, "by-hand");
}

// A one-node step's store listens on loopback only: the agent reaches it
// there, not at the node's name (which hung before: the name's address
// was refused).
TEST(ResolveTest, AOneNodeSlurmStepReachesItsStoreOverLoopback) {
  Vars oneNode = {{"SLURM_JOB_ID", "77"},          {"SLURM_STEP_ID", "2"},
                  {"SLURM_PROCID", "0"},           {"SLURM_NODEID", "0"},
                  {"SLURM_LOCALID", "0"},          {"SLURM_STEP_NUM_TASKS", "1"},
                  {"SLURM_STEP_NUM_NODES", "1"},   {"SLURM_STEP_TASKS_PER_NODE", "1"},
                  {"SLURM_STEP_NODELIST", "gpu01"}};
  AgentConfig c = resolve(withProgram({"true"}), oneNode);
  EXPECT_EQ(c.layout.numNodes, 1);
  EXPECT_EQ(c.storeHost, "127.0.0.1");
  EXPECT_EQ(c.storePort, cluster::derivedMasterPort("77", "2"));
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

TEST(ResolveTest, ExplicitNodesNeedAnEndpointAndTakeAToken) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "2";
  o.nodeRank = 1;
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--nnodes 2 needs --rdzv-endpoint"));
  o.rdzvEndpoint = "head:1234";
  AgentConfig c = resolve(o, {{"DISTRUN_TOKEN", "s3cret"}});
  EXPECT_EQ(c.storeHost, "head");
  EXPECT_EQ(c.storePort, 1234);
  EXPECT_EQ(c.layout.nodeRank, 1);
  EXPECT_EQ(c.token, "s3cret");
  o.nodeRank = 2;
  EXPECT_EQ(usageError(o, {{"DISTRUN_TOKEN", "s"}}),
            "--node-rank 2 contradicts --nnodes 2: expected 0 <= node rank < nodes");
}

// torchrun's one-node c10d recipe: no --node-rank, no DISTRUN_TOKEN; the
// store listens at the endpoint's port on 127.0.0.1.
TEST(ResolveTest, OneNodeWithAnEndpointNeedsNoNodeRankNorToken) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "1";
  o.rdzvEndpoint = "localhost:29411";
  o.rdzvId = "myjob";
  AgentConfig c = resolve(o);
  EXPECT_EQ(c.layout.numNodes, 1);
  EXPECT_EQ(c.layout.nodeRank, 0);
  EXPECT_EQ(c.storeHost, "127.0.0.1");
  EXPECT_EQ(c.storePort, 29411);
  EXPECT_EQ(c.runId, "myjob");
  EXPECT_EQ(c.token.size(), 32u);
  EXPECT_EQ(resolve(o, {{"DISTRUN_TOKEN", "s"}}).token, "s");
  o.rdzvEndpoint.reset();
  o.masterAddr = "head";
  o.masterPort = 23456;
  EXPECT_EQ(resolve(o).storePort, 23456);
  o.nodeRank = 1;
  EXPECT_EQ(usageError(o), "--node-rank 1 contradicts --nnodes 1: expected 0 <= node rank < nodes");
}

TEST(ResolveTest, StandaloneContradictsAFlagThatPlacesTheStoreOrTheNode) {
  RunOptions o = withProgram({"true"});
  o.standalone = true;
  o.rdzvEndpoint = "localhost:29411";
  EXPECT_EQ(usageError(o),
            "--standalone contradicts --rdzv-endpoint localhost:29411: --standalone hosts a "
            "private store on a free port of 127.0.0.1 for one node; drop one of them");
  o.rdzvEndpoint.reset();
  o.masterPort = 29500;
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--standalone contradicts --master-port 29500"));
  o.masterPort.reset();
  o.nodeRank = 1;
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--standalone contradicts --node-rank 1"));
  o.nodeRank = 0;
  EXPECT_EQ(resolve(o).layout.nodeRank, 0);
}

// torchrun takes any --rdzv-conf key; distrun too, with a note for those
// nobody reads.
TEST(ResolveTest, EveryRdzvConfKeyIsTakenAndTheUnreadOnesNoted) {
  RunOptions o = withProgram({"true"});
  o.rdzvConf = "store_type=file,use_libuv=0,read_timeout=60,join_timout=60,frobnicate=1";
  EXPECT_NO_THROW(resolve(o));
  EXPECT_THAT(rdzvConfNotes(o.rdzvConf),
              ElementsAre("--rdzv-conf frobnicate=1: a key neither torchrun's rendezvous nor "
                          "distrun reads, ignored",
                          "--rdzv-conf join_timout=60: a key neither torchrun's rendezvous nor "
                          "distrun reads, ignored (did you mean join_timeout?)"));
  o.rdzvConf = "join_timeout";
  EXPECT_EQ(usageError(o), "--rdzv-conf 'join_timeout': expected key=value pairs");
}

Vars mpirunTask(int rank, int size) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(size)}};
}

// mpirun -np 2 distrun run --nproc-per-node 2: two agents that cannot find
// each other would start two separate jobs; refused, saying what to use.
TEST(ResolveTest, OneOfSeveralMpirunTasksIsRefused) {
  RunOptions o = withProgram({"true"});
  o.nprocPerNode = "2";
  EXPECT_EQ(usageError(o, mpirunTask(1, 2)),
            "distrun run is one of 2 tasks started by mpirun (OMPI_COMM_WORLD_SIZE=2): each "
            "would start its own separate job of --nproc-per-node 2 workers; for one rank per "
            "task use 'mpirun -np N distrun exec -- PROGRAM', for workers per node start one "
            "distrun run per node (srun --ntasks-per-node=1, or --nnodes, --node-rank and "
            "--rdzv-endpoint)");
  EXPECT_EQ(resolve(o, mpirunTask(0, 1)).layout.localWorldSize, 2) << "mpirun -np 1: one node";
  o.standalone = true;
  EXPECT_EQ(resolve(o, mpirunTask(1, 2)).layout.localWorldSize, 2) << "placed by its flags";
}

TEST(ResolveTest, NodeRangesMustBeMinToMax) {
  RunOptions o = withProgram({"true"});
  for (const char* bad : {"0", "3:2", "0:2", "1:2:3", "x:2"}) {
    o.nnodes = bad;
    EXPECT_THAT(usageError(o, {{"DISTRUN_TOKEN", "s"}}),
                ::testing::StartsWith(std::string("--nnodes ") + bad))
        << bad;
  }
  o.nnodes = "1:1";
  EXPECT_EQ(resolve(o).layout.numNodes, 1);
}

// torchrun's c10d line: --nnodes=2 --rdzv_id=ID --rdzv_endpoint=HOST:PORT,
// no node rank: the nodes meet by arrival.
TEST(ResolveTest, NodesWithoutANodeRankMeetByArrival) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "2";
  o.rdzvEndpoint = "head:29500";
  o.rdzvId = "4242";
  const Vars secret{{"XDG_CONFIG_HOME", ::testing::TempDir() + "/run-options-config"}};
  AgentConfig c = resolve(o, secret);
  ASSERT_TRUE(c.elastic);
  EXPECT_EQ(c.elastic->minNodes, 2);
  EXPECT_EQ(c.elastic->maxNodes, 2);
  EXPECT_EQ(c.elastic->preferredNodeRank, std::nullopt);
  EXPECT_EQ(c.elastic->preferredRankScope, "");
  EXPECT_EQ(c.storeHost, "head");
  EXPECT_EQ(c.storePort, 29500);
  EXPECT_EQ(c.runId, "4242");
  EXPECT_EQ(c.token.size(), 64u) << "keyed with the user's secret from --rdzv-id";
  EXPECT_EQ(resolve(o, secret).token, c.token) << "the same on every node sharing the secret";
  // torchrun's static line needs no run id: the token is keyed by the
  // store's endpoint, the same on every node sharing the secret.
  o.rdzvId.reset();
  o.nodeRank = 1;
  AgentConfig noId = resolve(o, secret);
  EXPECT_EQ(noId.token.size(), 64u);
  EXPECT_NE(noId.token, c.token);
  EXPECT_EQ(resolve(o, secret).token, noId.token);
  EXPECT_EQ(noId.runId, "none") << "torchrun's default";
}

TEST(ResolveTest, AnElasticRangeReadsItsLastCallAndRefusesANodeRank) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "2:4";
  o.rdzvEndpoint = "head";
  o.rdzvConf = "last_call_timeout=12,join_timeout=60";
  AgentConfig c = resolve(o, {{"DISTRUN_TOKEN", "s"}});
  ASSERT_TRUE(c.elastic);
  EXPECT_EQ(c.elastic->minNodes, 2);
  EXPECT_EQ(c.elastic->maxNodes, 4);
  EXPECT_EQ(c.elastic->lastCall, std::chrono::seconds(12));
  EXPECT_EQ(c.joinTimeout, std::chrono::seconds(60));
  o.nodeRank = 1;
  EXPECT_EQ(usageError(o, {{"DISTRUN_TOKEN", "s"}}),
            "--node-rank 1 contradicts --nnodes 2:4: the nodes of an elastic job get their "
            "ranks as they arrive; drop --node-rank");
}

// In a Slurm step, an elastic job keeps Slurm's node ids as the preferred
// node ranks and its store where a fixed one would be.
TEST(ResolveTest, AnElasticSlurmStepPrefersSlurmsNodeIds) {
  RunOptions o = withProgram({"true"});
  o.nnodes = "1:2";
  AgentConfig c = resolve(o, slurmAgent(1));
  ASSERT_TRUE(c.elastic);
  EXPECT_EQ(c.elastic->preferredNodeRank, 1);
  EXPECT_EQ(c.elastic->preferredRankScope, "77.2") << "the ids of this step";
  EXPECT_EQ(c.elastic->nodeName, "gpu02");
  EXPECT_EQ(c.storeHost, "gpu01");
}

TEST(ResolveTest, RdzvConfJoinTimeoutAndLogs) {
  RunOptions o = withProgram({"true"});
  o.rdzvConf = "join_timeout=42,read_timeout=9";
  o.tee = "3";
  o.localRanksFilter = "0,2";
  AgentConfig c = resolve(o);
  EXPECT_EQ(c.joinTimeout, std::chrono::seconds(42));
  EXPECT_EQ(c.logDir, "") << "a private run folder, made by the agent";
  EXPECT_TRUE(c.logDirIsPrivate);
  EXPECT_EQ(*c.consoleRanks, (std::set<int>{0, 2}));
  o.logPrefix = "{nope}";
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--log-prefix '{nope}'"));
}

TEST(ResolveTest, HangTimeoutIsOffByDefaultAndInSeconds) {
  RunOptions o = withProgram({"true"});
  EXPECT_EQ(resolve(o).hangTimeout.count(), 0);
  o.hangTimeout = 90;
  EXPECT_EQ(resolve(o).hangTimeout, std::chrono::seconds(90));
  o.hangTimeout = 1.5;
  EXPECT_EQ(resolve(o).hangTimeout, std::chrono::milliseconds(1500));
}

TEST(ResolveTest, HangTimeoutIsZeroOrAtLeastASecond) {
  RunOptions o = withProgram({"true"});
  o.hangTimeout = -5;
  EXPECT_EQ(usageError(o),
            "--hang-timeout -5: expected 0 (off) or a number of seconds of at least 1 (progress "
            "is sampled every second)");
  o.hangTimeout = 0.5;
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--hang-timeout 0.5: expected 0 (off)"));
  o.hangTimeout = std::numeric_limits<double>::infinity();
  EXPECT_THAT(usageError(o), ::testing::StartsWith("--hang-timeout inf: expected 0 (off)"));
}

}  // namespace
}  // namespace distrun::launch
