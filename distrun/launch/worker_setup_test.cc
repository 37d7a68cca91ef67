#include "distrun/launch/worker_setup.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/binding/bind_flags.h"
#include "distrun/binding/local_topology.h"
#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Node 1 of 2, three workers each, under Slurm.
AgentConfig nodeOne() {
  AgentConfig c;
  c.layout.scheduler = cluster::Scheduler::kSlurm;
  c.layout.jobId = "77";
  c.layout.stepId = "2";
  c.layout.numNodes = 2;
  c.layout.nodeRank = 1;
  c.layout.localWorldSize = 3;
  c.layout.visibleDevices = {"0", "1", "2"};
  c.layout.visibleDevicesVariable = "CUDA_VISIBLE_DEVICES";
  c.host = "gpu02";
  c.storeHost = "gpu01";
  c.token = "secret";
  c.runId = "77.2";
  c.program = {"train", "--lr", "1"};
  c.maxRestarts = 2;
  c.cpus = {0, 1, 2, 3, 4, 5, 6};
  return c;
}

rdzv::World worldOfSix(int round = 0) {
  rdzv::World world{round, 2, 6, 3, "gpu01", 29555};
  world.nodeRank = 1;
  world.restarts = round;
  return world;
}

binding::BindRequest bindRequest(const AgentConfig& c, const std::string& cpuBind) {
  binding::BindRequest r;
  r.ranks = c.layout.localWorldSize;
  r.allowed = c.cpus;
  r.cpu = binding::parseCpuBind(cpuBind);
  return r;
}

binding::NodeTopology twoGpus() {
  return binding::readTopologyXml(std::string(DISTRUN_SOURCE_DIR) +
                                  "/distrun/binding/testdata/two_cpus_two_gpus.xml");
}

std::string valueIn(const std::vector<std::string>& environment, const std::string& name) {
  for (const std::string& entry : environment) {
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
  }
  return "<unset>";
}

TEST(WorkerLayoutTest, TheNodesLayoutWithTheWorkersPlaceInTheWorld) {
  cluster::JobLayout worker = workerLayout(nodeOne().layout, worldOfSix(), 2, 2);
  EXPECT_EQ(worker.rank, 5);
  EXPECT_EQ(worker.worldSize, 6);
  EXPECT_EQ(worker.localRank, 2);
  EXPECT_EQ(worker.localWorldSize, 3);
  EXPECT_EQ(worker.nodeRank, 1);
  EXPECT_EQ(worker.numNodes, 2);
  EXPECT_EQ(worker.masterHost, "gpu01");
  EXPECT_EQ(worker.cpusPerTask, 2);
  EXPECT_EQ(worker.jobId, "77");
  EXPECT_EQ(worker.scheduler, cluster::Scheduler::kSlurm);
  EXPECT_THAT(worker.visibleDevices, ElementsAre("0", "1", "2"));
  EXPECT_EQ(workerRank(worldOfSix(), 0), 3);
}

// `distrun run` creates the site profile's node folders for its workers as
// `distrun exec` does for its task (cluster::makeNodeDirs), LUMI's
// MIOPEN_USER_DB_PATH among them, with ${USER} and ${SLURM_NODEID}
// standing for the user and node even where they are unset.
TEST(WorkerSpecTest, CreatesTheSiteProfilesNodeFolders) {
  const std::string root = ::testing::TempDir() + "/worker_node_dirs_" + std::to_string(::getpid());
  AgentConfig c = nodeOne();
  c.site = cluster::parseSiteProfile("set MIOPEN_USER_DB_PATH = " + root +
                                         "/${USER}-miopen-${SLURM_JOB_ID}-${SLURM_NODEID}\n"
                                         "node-dir MIOPEN_USER_DB_PATH\n",
                                     "lumi", "lumi.site");
  const WorkerSpec spec =
      workerSpec(c, worldOfSix(), 29400, 0, MapEnvironment({{"SLURM_JOB_ID", "77"}}));
  const std::string dir = root + "/" + cluster::loginName() + "-miopen-77-1";
  EXPECT_EQ(valueIn(spec.environment, "MIOPEN_USER_DB_PATH"), dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  std::filesystem::remove_all(root);
}

TEST(WorkerEnvironmentTest, TheRankContractOverTheAgentsEnvironment) {
  AgentConfig c = nodeOne();
  c.logDir = "/logs";
  c.errorRoot = "/logs";  // resolveAgentConfig: --log-dir
  MapEnvironment env({{"PATH", "/opt/bin"}, {"RANK", "99"}, {"HOME", "/home/u"}});
  std::vector<std::string> vars = workerEnvironment(c, worldOfSix(1), 29400, 1, env);
  EXPECT_EQ(valueIn(vars, "PATH"), "/opt/bin");
  EXPECT_EQ(valueIn(vars, "HOME"), "/home/u");
  EXPECT_EQ(valueIn(vars, "RANK"), "4") << "identity comes from the rendezvous";
  EXPECT_EQ(valueIn(vars, "LOCAL_RANK"), "1");
  EXPECT_EQ(valueIn(vars, "WORLD_SIZE"), "6");
  EXPECT_EQ(valueIn(vars, "LOCAL_WORLD_SIZE"), "3");
  EXPECT_EQ(valueIn(vars, "GROUP_RANK"), "1");
  EXPECT_EQ(valueIn(vars, "MASTER_ADDR"), "gpu01");
  EXPECT_EQ(valueIn(vars, "MASTER_PORT"), "29555");
  EXPECT_EQ(valueIn(vars, "TORCHELASTIC_RESTART_COUNT"), "1");
  EXPECT_EQ(valueIn(vars, "TORCHELASTIC_MAX_RESTARTS"), "2");
  EXPECT_EQ(valueIn(vars, "TORCHELASTIC_RUN_ID"), "77.2");
  EXPECT_EQ(valueIn(vars, "OMP_NUM_THREADS"), "2") << "CPUs 3-4 of 0-6";
  EXPECT_EQ(valueIn(vars, "DISTRUN_STORE"), "gpu01:29400");
  EXPECT_EQ(valueIn(vars, "DISTRUN_TOKEN"), "secret");
  EXPECT_EQ(valueIn(vars, "TORCHELASTIC_ERROR_FILE"), "/logs/77.2/attempt_1/1/error.json");
}

TEST(WorkerEnvironmentTest, TheBaseIsTheEnvironmentSeamNotTheProcess) {
  ::setenv("DISTRUN_WORKER_SETUP_TEST", "from-the-process", 1);
  std::vector<std::string> fromMap =
      workerEnvironment(nodeOne(), worldOfSix(), 29400, 0, MapEnvironment());
  EXPECT_EQ(valueIn(fromMap, "DISTRUN_WORKER_SETUP_TEST"), "<unset>");
  ProcessEnvironment process;
  MapEnvironment top({{"DISTRUN_WORKER_SETUP_TEST", "from-the-top"}});
  OverlayEnvironment overlay(process, top);
  EXPECT_EQ(valueIn(workerEnvironment(nodeOne(), worldOfSix(), 29400, 0, process),
                    "DISTRUN_WORKER_SETUP_TEST"),
            "from-the-process");
  EXPECT_EQ(valueIn(workerEnvironment(nodeOne(), worldOfSix(), 29400, 0, overlay),
                    "DISTRUN_WORKER_SETUP_TEST"),
            "from-the-top");
  EXPECT_EQ(overlay.all().at("PATH"), process.get("PATH"));
  ::unsetenv("DISTRUN_WORKER_SETUP_TEST");
}

TEST(WorkerSpecTest, ProgramAndCpuShareWhenBinding) {
  AgentConfig c = nodeOne();
  MapEnvironment env;
  WorkerSpec first = workerSpec(c, worldOfSix(), 29400, 0, env);
  EXPECT_THAT(first.argv, ElementsAre("train", "--lr", "1"));
  EXPECT_THAT(first.cpus, ElementsAre(0, 1, 2));
  EXPECT_THAT(workerSpec(c, worldOfSix(), 29400, 2, env).cpus, ElementsAre(5, 6));
  c.plan =
      binding::bindRanks(binding::readSyntheticTopology("core:7 pu:1"), bindRequest(c, "none"));
  WorkerSpec unbound = workerSpec(c, worldOfSix(), 29400, 0, env);
  EXPECT_THAT(unbound.cpus, IsEmpty());
  EXPECT_EQ(valueIn(unbound.environment, "OMP_NUM_THREADS"), "3") << "its share still";
  EXPECT_EQ(valueIn(unbound.environment, "TORCHELASTIC_ERROR_FILE"), "<unset>") << "no --log-dir";
}

// --cpu-bind and --gpu-bind per mode on described nodes: each worker's
// cores (its affinity) and the GPU visibility variable it is given.
TEST(WorkerSpecTest, CoresModeGivesEachWorkerItsPlansCores) {
  AgentConfig c = nodeOne();
  c.plan = binding::bindRanks(binding::readSyntheticTopology("pack:2 core:4 pu:1"),
                              bindRequest(c, "cores"));
  MapEnvironment env;
  EXPECT_THAT(workerSpec(c, worldOfSix(), 29400, 0, env).cpus, ElementsAre(0, 1, 2));
  WorkerSpec last = workerSpec(c, worldOfSix(), 29400, 2, env);
  EXPECT_THAT(last.cpus, ElementsAre(5, 6));
  EXPECT_EQ(valueIn(last.environment, "CUDA_VISIBLE_DEVICES"), "<unset>") << "no GPU";
}

TEST(WorkerSpecTest, NumaModeGivesEveryAllowedCoreOfTheDomain) {
  AgentConfig c = nodeOne();
  c.layout.localWorldSize = 2;
  c.cpus = {0, 1, 2, 3, 4, 5, 6, 7};
  binding::BindRequest r = bindRequest(c, "numa");
  r.gpu = binding::parseGpuBind("none");
  c.plan = binding::bindRanks(binding::readSyntheticTopology("pack:2 numa:1 core:4 pu:1"), r);
  EXPECT_THAT(workerSpec(c, worldOfSix(), 29400, 1, MapEnvironment()).cpus,
              ElementsAre(4, 5, 6, 7));
}

TEST(WorkerSpecTest, MaskModeGivesEachWorkerItsMask) {
  AgentConfig c = nodeOne();
  c.plan = binding::bindRanks(binding::readSyntheticTopology("core:7 pu:1"),
                              bindRequest(c, "mask:0x1,0x6,0x40"));
  EXPECT_THAT(workerSpec(c, worldOfSix(), 29400, 1, MapEnvironment()).cpus, ElementsAre(1, 2));
  EXPECT_THAT(workerSpec(c, worldOfSix(), 29400, 2, MapEnvironment()).cpus, ElementsAre(6));
}

// Two workers of an agent on the two-GPU node that sees GPUs `ids`.
AgentConfig twoWorkersOnTwoGpus(std::vector<std::string> ids) {
  AgentConfig c = nodeOne();
  c.layout.localWorldSize = 2;
  c.cpus = {0, 1};
  c.gpuIds = std::move(ids);
  return c;
}

// torchrun's contract: every worker sees the agent's GPUs and uses
// cuda:LOCAL_RANK, the plan's GPU; the cores follow it.
TEST(WorkerSpecTest, ThePlansGpuIsCudaLocalRankOfTheAgentsList) {
  AgentConfig c = twoWorkersOnTwoGpus({"0", "1"});
  c.plan = binding::bindRanks(twoGpus(), bindRequest(c, "cores"));
  WorkerSpec second = workerSpec(c, worldOfSix(), 29400, 1, MapEnvironment());
  EXPECT_THAT(second.cpus, ElementsAre(1));
  EXPECT_EQ(valueIn(second.environment, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(valueIn(second.environment, "LOCAL_RANK"), "1");
  EXPECT_EQ(valueIn(second.environment, "DISTRUN_LOCAL_DEVICE"), "1");
}

// map:LIST reorders the list in the agent's variable so that the mapped
// GPU is cuda:LOCAL_RANK.
TEST(WorkerSpecTest, AMappedGpuIsSwappedToLocalRankInTheAgentsVariable) {
  AgentConfig c = twoWorkersOnTwoGpus({"0", "1"});
  c.gpuVisibilityVariable = "ROCR_VISIBLE_DEVICES";
  binding::BindRequest map = bindRequest(c, "cores");
  map.gpu = binding::parseGpuBind("map:1,0");
  c.plan = binding::bindRanks(twoGpus(), map);
  WorkerSpec first = workerSpec(c, worldOfSix(), 29400, 0, MapEnvironment());
  EXPECT_EQ(valueIn(first.environment, "ROCR_VISIBLE_DEVICES"), "1,0");
  EXPECT_EQ(valueIn(first.environment, "CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(valueIn(first.environment, "DISTRUN_LOCAL_DEVICE"), "0");
}

TEST(WorkerSpecTest, VirtualLocalRankShowsOneGpuAsDeviceZero) {
  AgentConfig c = twoWorkersOnTwoGpus({"GPU-a", "GPU-b"});
  c.virtualLocalRank = true;
  c.plan = binding::bindRanks(twoGpus(), bindRequest(c, "cores"));
  WorkerSpec second = workerSpec(c, worldOfSix(), 29400, 1, MapEnvironment());
  EXPECT_EQ(valueIn(second.environment, "CUDA_VISIBLE_DEVICES"), "GPU-b");
  EXPECT_EQ(valueIn(second.environment, "LOCAL_RANK"), "0");
  EXPECT_EQ(valueIn(second.environment, "RANK"), "4") << "the global rank is unchanged";
  EXPECT_EQ(valueIn(second.environment, "DISTRUN_LOCAL_DEVICE"), "0");
}

// A --log-dir where the error file's folder cannot be made is an I/O error
// naming the file, before the worker starts.
TEST(WorkerSpecTest, AnErrorFileFolderThatCannotBeMadeIsAnIoError) {
  AgentConfig c = nodeOne();
  c.errorRoot = "/proc/distrun-no-such";
  try {
    workerSpec(c, worldOfSix(), 29400, 1, MapEnvironment());
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kIo);
    EXPECT_THAT(e.what(), ::testing::StartsWith("TORCHELASTIC_ERROR_FILE /proc/distrun-no-such/"));
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr("/attempt_0/1/error.json: cannot make its folder: "));
  }
}

TEST(WorkerSpecTest, FewerCpusThanWorkersGiveOneThreadEach) {
  AgentConfig c = nodeOne();
  c.cpus = {0, 1};
  WorkerSpec spec = workerSpec(c, worldOfSix(), 29400, 1, MapEnvironment());
  EXPECT_THAT(spec.cpus, IsEmpty());
  EXPECT_EQ(valueIn(spec.environment, "OMP_NUM_THREADS"), "1");
}

}  // namespace
}  // namespace distrun::launch
