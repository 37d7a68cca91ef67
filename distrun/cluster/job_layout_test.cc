#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/leftovers.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/slurm_step_testing.h"
#include "distrun/common/error.h"

namespace distrun::cluster {
namespace {

using ::testing::ElementsAre;
using testing::slurmStep;
using testing::Vars;

// This host: node2, named in the allocations and node files below.
const HostFacts kNode2{"node2", 8};

JobLayout detect(const Vars& vars, const HostFacts& host = kNode2) {
  return detectJobLayout(MapEnvironment(vars), host);
}

// detect's ConfigError, less the hint on clearing stale variables that
// every one of them must end with.
std::string detectError(const Vars& vars) {
  try {
    detect(vars);
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    const std::string hint = kClearStaleHint;
    if (!message.ends_with(hint)) return message + " [without the hint]";
    return message.substr(0, message.size() - hint.size());
  }
  return "no error";
}

TEST(SlurmLayoutTest, UnevenStepUsesSchedulerIds) {
  JobLayout l = detect(slurmStep(5, 2, 1));
  EXPECT_EQ(l.scheduler, Scheduler::kSlurm);
  EXPECT_EQ(l.rank, 5);
  EXPECT_EQ(l.worldSize, 7);
  EXPECT_EQ(l.localRank, 1);
  EXPECT_EQ(l.localWorldSize, 2);
  EXPECT_EQ(l.nodeRank, 2);
  EXPECT_EQ(l.numNodes, 4);
  EXPECT_THAT(l.hosts, ElementsAre("gpu-07", "gpu-08", "gpu-09", "cpu01"));
  EXPECT_EQ(l.masterHost, "gpu-07");
  EXPECT_EQ(l.jobId, "4242");
  EXPECT_EQ(l.stepId, "3");
}

TEST(SlurmLayoutTest, LastNodeOfUnevenStepHasOneTask) {
  JobLayout l = detect(slurmStep(6, 3, 0));
  EXPECT_EQ(l.localWorldSize, 1);
  EXPECT_EQ(l.localRank, 0);
}

TEST(SlurmLayoutTest, CyclicDistributionKeepsProcid) {
  // With --distribution=cyclic, rank 1 sits on node 1: ranks come from
  // SLURM_PROCID, never from positions.
  Vars v = slurmStep(1, 1, 0);
  JobLayout l = detect(v);
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.nodeRank, 1);
}

TEST(SlurmLayoutTest, FallsBackToJobVariablesWithoutStepOnes) {
  Vars v = {{"SLURM_JOB_ID", "7"},
            {"SLURM_STEPID", "0"},
            {"SLURM_PROCID", "2"},
            {"SLURM_NODEID", "1"},
            {"SLURM_LOCALID", "0"},
            {"SLURM_NTASKS", "3"},
            {"SLURM_NNODES", "2"},
            {"SLURM_TASKS_PER_NODE", "2,1"},
            {"SLURM_JOB_NODELIST", "n[1-2]"},
            {"SLURM_CPUS_PER_TASK", "4"}};
  JobLayout l = detect(v);
  EXPECT_EQ(l.worldSize, 3);
  EXPECT_EQ(l.localWorldSize, 1);
  EXPECT_EQ(l.masterHost, "n1");
  EXPECT_EQ(l.cpusPerTask, 4);
}

// The job-level twins a step falls back to are named when they were read.
TEST(SlurmLayoutTest, ErrorsNameTheVariableActuallyRead) {
  Vars v = {{"SLURM_JOB_ID", "7"}, {"SLURM_STEPID", "0"},         {"SLURM_PROCID", "1"},
            {"SLURM_NODEID", "0"}, {"SLURM_LOCALID", "0"},        {"SLURM_NTASKS", "1"},
            {"SLURM_NNODES", "1"}, {"SLURM_TASKS_PER_NODE", "1"}, {"SLURM_JOB_NODELIST", "vm1"}};
  EXPECT_EQ(detectError(v),
            "SLURM_PROCID=1 contradicts SLURM_NTASKS=1: expected SLURM_PROCID < SLURM_NTASKS");
  v["SLURM_PROCID"] = "0";
  v["SLURM_JOB_NODELIST"] = "vm[1-2";
  EXPECT_EQ(detectError(v),
            "SLURM_JOB_NODELIST: invalid hostlist 'vm[1-2': expected ']' (the '[' at column 3 is "
            "not closed) at column 7, found the end of the list");
  v["SLURM_JOB_NODELIST"] = "vm[1-2]";
  EXPECT_EQ(detectError(v), "SLURM_JOB_NODELIST names 2 hosts but SLURM_NNODES=1");
  v.erase("SLURM_NODEID");
  EXPECT_EQ(detectError(v), "SLURM_PROCID=0 is set but SLURM_NODEID is not");
}

TEST(SlurmLayoutTest, BatchScriptIsAWorldOfOne) {
  Vars v = {{"SLURM_JOB_ID", "9"},
            {"SLURM_PROCID", "0"},
            {"SLURM_NODEID", "0"},
            {"SLURM_NTASKS", "8"},
            {"SLURM_JOB_NODELIST", "n[1-2]"}};
  JobLayout l = detect(v);
  EXPECT_EQ(l.scheduler, Scheduler::kSlurm);
  EXPECT_EQ(l.worldSize, 1);
  EXPECT_EQ(l.stepId, "batch");
  EXPECT_EQ(l.masterHost, "node2");
  ASSERT_EQ(l.notes.size(), 1u);
  EXPECT_THAT(l.notes[0], ::testing::HasSubstr("not inside a Slurm job step"));
}

TEST(SlurmLayoutTest, GpuVariablesAreRead) {
  Vars v = slurmStep(0, 0, 0);
  v["SLURM_STEP_GPUS"] = "4,5";
  JobLayout l = detect(v);
  EXPECT_THAT(l.visibleDevices, ElementsAre("4", "5"));
  EXPECT_EQ(l.visibleDevicesVariable, "SLURM_STEP_GPUS");
  v["CUDA_VISIBLE_DEVICES"] = "0";
  EXPECT_THAT(detect(v).visibleDevices, ElementsAre("0"));
}

TEST(SlurmLayoutTest, ContradictionsNameTheVariables) {
  Vars v = slurmStep(7, 3, 0);
  EXPECT_EQ(detectError(v),
            "SLURM_PROCID=7 contradicts SLURM_STEP_NUM_TASKS=7: expected SLURM_PROCID "
            "< SLURM_STEP_NUM_TASKS");
  v = slurmStep(0, 0, 0);
  v["SLURM_STEP_TASKS_PER_NODE"] = "2(x3),2";
  EXPECT_EQ(detectError(v),
            "SLURM_STEP_TASKS_PER_NODE adds up to 8 tasks but SLURM_STEP_NUM_TASKS=7");
  v["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  EXPECT_EQ(detectError(v), "SLURM_STEP_TASKS_PER_NODE lists 3 nodes but SLURM_STEP_NUM_NODES=4");
  v = slurmStep(6, 3, 1);
  EXPECT_EQ(detectError(v),
            "SLURM_LOCALID=1 contradicts SLURM_STEP_TASKS_PER_NODE on node 3=1: "
            "expected SLURM_LOCALID < SLURM_STEP_TASKS_PER_NODE on node 3");
  v = slurmStep(0, 4, 0);
  EXPECT_EQ(detectError(v),
            "SLURM_NODEID=4 contradicts SLURM_STEP_NUM_NODES=4: expected SLURM_NODEID "
            "< SLURM_STEP_NUM_NODES");
  v = slurmStep(0, 0, 0);
  v["SLURM_STEP_NODELIST"] = "gpu-[07-09]";
  EXPECT_EQ(detectError(v), "SLURM_STEP_NODELIST names 3 hosts but SLURM_STEP_NUM_NODES=4");
  v = slurmStep(0, 0, 0);
  v["SLURMD_NODENAME"] = "gpu-08";
  EXPECT_EQ(detectError(v),
            "SLURMD_NODENAME=gpu-08 contradicts SLURM_NODEID=0: node 0 of "
            "SLURM_STEP_NODELIST is gpu-07");
  v = slurmStep(0, 0, 0);
  v["SLURM_PROCID"] = "x";
  EXPECT_EQ(detectError(v), "SLURM_PROCID='x' is not a whole number (unexpected 'x')");
  v = slurmStep(0, 0, 0);
  v.erase("SLURM_STEP_NUM_TASKS");
  v.erase("SLURM_NTASKS");
  EXPECT_EQ(detectError(v),
            "SLURM_PROCID and SLURM_STEP_ID say this is a task of a Slurm step but none of "
            "SLURM_STEP_NUM_TASKS, "
            "SLURM_NTASKS, SLURM_NPROCS is set");
  v = slurmStep(0, 0, 0);
  v["SLURM_STEP_NODELIST"] = "gpu-[07-09";
  EXPECT_THAT(detectError(v), ::testing::StartsWith("SLURM_STEP_NODELIST: invalid hostlist"));
}

Vars openMpi(int rank, int size, int local, int localSize) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", std::to_string(size)},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(local)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(localSize)},
          {"OMPI_MCA_ess_base_jobid", "1995243521"}};
}

TEST(OpenMpiLayoutTest, OneNode) {
  JobLayout l = detect(openMpi(2, 3, 2, 3));
  EXPECT_EQ(l.scheduler, Scheduler::kOpenMpi);
  EXPECT_EQ(l.rank, 2);
  EXPECT_EQ(l.worldSize, 3);
  EXPECT_EQ(l.localRank, 2);
  EXPECT_EQ(l.numNodes, 1);
  EXPECT_EQ(l.masterHost, "127.0.0.1");
  EXPECT_EQ(l.jobId, "1995243521");
}

TEST(OpenMpiLayoutTest, InsideSlurmAllocationWinsOverSlurmVariables) {
  Vars v = openMpi(3, 4, 1, 2);
  v["OMPI_MCA_orte_num_nodes"] = "2";
  v["SLURM_JOB_ID"] = "11";
  v["SLURM_JOB_NODELIST"] = "node[1-2]";
  v["SLURM_PROCID"] = "1";  // orted's own task id, inherited
  v["SLURM_STEP_ID"] = "0";
  JobLayout l = detect(v);
  EXPECT_EQ(l.scheduler, Scheduler::kOpenMpi);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.nodeRank, 1);  // found this host, node2, in the allocation
  EXPECT_EQ(l.masterHost, "node1");
}

TEST(OpenMpiLayoutTest, SeveralNodesWithoutAllocationNeedMasterAddr) {
  Vars v = openMpi(0, 4, 0, 2);
  EXPECT_EQ(detectError(v),
            "openmpi job spans 2 nodes (OMPI_COMM_WORLD_SIZE=4 over OMPI_COMM_WORLD_LOCAL_SIZE=2) "
            "and no allocation (SLURM_JOB_NODELIST, "
            "PBS_NODEFILE) says which host runs rank 0: set MASTER_ADDR "
            "(mpirun -x MASTER_ADDR=HOST)");
  v["MASTER_ADDR"] = "head";
  EXPECT_EQ(detect(v).nodeRank, 0);
}

TEST(OpenMpiLayoutTest, Contradictions) {
  EXPECT_EQ(detectError(openMpi(3, 3, 0, 1)),
            "OMPI_COMM_WORLD_RANK=3 contradicts OMPI_COMM_WORLD_SIZE=3: "
            "expected OMPI_COMM_WORLD_RANK < OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(detectError(openMpi(0, 2, 0, 3)),
            "OMPI_COMM_WORLD_LOCAL_SIZE=3 contradicts OMPI_COMM_WORLD_SIZE=2: "
            "expected OMPI_COMM_WORLD_LOCAL_SIZE <= OMPI_COMM_WORLD_SIZE");
}

TEST(OpenMpiLayoutTest, MissingOrMalformedVariablesAreNamed) {
  Vars v = openMpi(0, 2, 0, 2);
  v.erase("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(detectError(v), "OMPI_COMM_WORLD_RANK=0 is set but OMPI_COMM_WORLD_SIZE is not");
  v = openMpi(0, 4, 0, 2);
  v["OMPI_MCA_orte_num_nodes"] = "2";
  v["SLURM_JOB_NODELIST"] = "n[1-";
  EXPECT_THAT(detectError(v), ::testing::StartsWith("SLURM_JOB_NODELIST: invalid hostlist 'n[1-'"));
  v.erase("SLURM_JOB_NODELIST");
  EXPECT_THAT(detectError(v),
              ::testing::StartsWith("openmpi job spans 2 nodes (OMPI_MCA_orte_num_nodes=2)"));
}

Vars hydra(int rank, int size, int local, int localSize) {
  return {{"PMI_RANK", std::to_string(rank)},
          {"PMI_SIZE", std::to_string(size)},
          {"MPI_LOCALRANKID", std::to_string(local)},
          {"MPI_LOCALNRANKS", std::to_string(localSize)}};
}

TEST(MpichLayoutTest, HydraOnOneNode) {
  JobLayout l = detect(hydra(1, 2, 1, 2));
  EXPECT_EQ(l.scheduler, Scheduler::kMpich);
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.localWorldSize, 2);
  EXPECT_EQ(l.masterHost, "127.0.0.1");
}

// The node count guessed from the largest world an int holds does not
// overflow (found by fuzz.job_layout: PMI_SIZE=2147483647, one task a node).
TEST(MpichLayoutTest, TheLargestWorldCountsItsNodesWithoutOverflow) {
  EXPECT_EQ(detectError(hydra(1, 2147483647, 0, 1)),
            "mpich job spans 2147483647 nodes (PMI_SIZE=2147483647 over MPI_LOCALNRANKS=1) and no "
            "allocation (SLURM_JOB_NODELIST, PBS_NODEFILE) says which host runs rank 0: set "
            "MASTER_ADDR (mpirun -x MASTER_ADDR=HOST)");
  EXPECT_EQ(detectError(hydra(1, 2147483647, 0, 2)),
            "mpich job spans 1073741824 nodes (PMI_SIZE=2147483647 over MPI_LOCALNRANKS=2) and no "
            "allocation (SLURM_JOB_NODELIST, PBS_NODEFILE) says which host runs rank 0: set "
            "MASTER_ADDR (mpirun -x MASTER_ADDR=HOST)");
}

TEST(MpichLayoutTest, ContradictionsNameThePmiVariables) {
  EXPECT_EQ(detectError(hydra(2, 2, 0, 1)),
            "PMI_RANK=2 contradicts PMI_SIZE=2: expected PMI_RANK < PMI_SIZE");
  EXPECT_EQ(detectError({{"PMI_RANK", "0"}}), "PMI_RANK=0 is set but PMI_SIZE is not");
}

TEST(MpichLayoutTest, AgreeingSrunPmiKeepsSlurmView) {
  Vars v = slurmStep(5, 2, 1);
  v["PMI_RANK"] = "5";
  v["PMI_SIZE"] = "7";
  EXPECT_EQ(detect(v).scheduler, Scheduler::kSlurm);
  v["PMI_RANK"] = "0";  // mpiexec.hydra inside the step: PMI is the truth
  v["PMI_SIZE"] = "2";
  v["MPI_LOCALNRANKS"] = "2";
  v["MPI_LOCALRANKID"] = "0";
  EXPECT_EQ(detect(v).scheduler, Scheduler::kMpich);
}

class PbsLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "pbs_nodefile_" + std::to_string(::getpid());
    std::ofstream(path_) << "cn01\ncn01\nnode2\nnode2\ncn03\n";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_;
};

TEST_F(PbsLayoutTest, TaskPlacedFromNodefile) {
  Vars v = {{"PBS_JOBID", "1234.pbs01"}, {"PBS_NODEFILE", path_}, {"PBS_VNODENUM", "3"}};
  JobLayout l = detect(v);
  EXPECT_EQ(l.scheduler, Scheduler::kPbs);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.worldSize, 5);
  EXPECT_EQ(l.localRank, 1);
  EXPECT_EQ(l.localWorldSize, 2);
  EXPECT_EQ(l.nodeRank, 1);
  EXPECT_EQ(l.numNodes, 3);
  EXPECT_THAT(l.hosts, ElementsAre("cn01", "node2", "cn03"));
  EXPECT_EQ(l.masterHost, "cn01");
}

TEST_F(PbsLayoutTest, JobScriptIsAWorldOfOne) {
  JobLayout l = detect({{"PBS_JOBID", "77.srv"}, {"PBS_NODEFILE", path_}});
  EXPECT_EQ(l.worldSize, 1);
  EXPECT_EQ(l.stepId, "batch");
}

TEST_F(PbsLayoutTest, ErrorsNameTheInput) {
  EXPECT_EQ(detectError({{"PBS_JOBID", "1"}, {"PBS_NODEFILE", path_}, {"PBS_VNODENUM", "5"}}),
            "PBS_VNODENUM=5 contradicts PBS_NODEFILE=" + path_ +
                ": it lists 5 slots, expected PBS_VNODENUM < 5");
  try {
    detect({{"PBS_JOBID", "1"}, {"PBS_NODEFILE", "/nonexistent/nodes"}, {"PBS_VNODENUM", "0"}});
    FAIL();
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "PBS_NODEFILE: cannot open '/nonexistent/nodes'");
  }
}

TEST(StandaloneLayoutTest, NothingSetIsOneProcess) {
  JobLayout l = detect({});
  EXPECT_EQ(l.scheduler, Scheduler::kStandalone);
  EXPECT_EQ(l.worldSize, 1);
  EXPECT_EQ(l.masterHost, "127.0.0.1");
  EXPECT_TRUE(l.jobId.empty());
}

TEST(StandaloneLayoutTest, HandWrittenWorldIsTaken) {
  JobLayout l = detect({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.worldSize, 2);
  EXPECT_EQ(l.localRank, 1);
  EXPECT_EQ(detectError({{"RANK", "2"}, {"WORLD_SIZE", "2"}}),
            "RANK=2 contradicts WORLD_SIZE=2: expected RANK < WORLD_SIZE");
  EXPECT_EQ(detectError({{"RANK", "3"}}), "RANK=3 is set but WORLD_SIZE is not");
  EXPECT_EQ(detectError({{"WORLD_SIZE", "2"}}), "WORLD_SIZE=2 is set but RANK is not");
}

}  // namespace
}  // namespace distrun::cluster
