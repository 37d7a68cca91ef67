#include "distrun/cluster/this_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cluster/leftovers.h"
#include "distrun/cluster/master_port.h"
#include "distrun/cluster/slurm_step_testing.h"
#include "distrun/common/error.h"

namespace distrun::cluster {
namespace {

using Source = RankVariable::Source;
using testing::slurmStep;
using testing::Vars;

// This host: gpu-09, node 2 of the step slurmStep describes.
const HostFacts kGpu09{"gpu-09", 8};
constexpr int kFreePort = 41000;

// Rank `rank` of `mpirun -np 3` on one node, inside a Slurm allocation
// whose variables (and the daemon's SLURM_PROCID) it inherited.
Vars openMpiRank(int rank) {
  return {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_SIZE", "3"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
          {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"},
          {"OMPI_MCA_ess_base_jobid", "77"},
          {"SLURM_JOB_ID", "4242"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", "0"}};
}

ThisTaskOptions taskOptions(LoneTaskStore lone = LoneTaskStore::kAsAnyTask) {
  ThisTaskOptions o;
  o.loneTaskStore = lone;
  o.pickFreePort = [] { return kFreePort; };
  return o;
}

ThisTask task(const Vars& vars, const ThisTaskOptions& o = taskOptions()) {
  return thisTask(MapEnvironment(vars), kGpu09, o);
}

std::string value(const ThisTask& t, const std::string& name) {
  return t.variables().getOr(name, "<unset>");
}

std::string taskError(const Vars& vars, const ThisTaskOptions& o = taskOptions()) {
  try {
    task(vars, o);
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
    return e.what();
  }
  return "no error";
}

TEST(ThisTaskTest, SlurmStepTaskTakesItsIdsFromSlurm) {
  ThisTask t = task(slurmStep(5, 2, 1));
  EXPECT_EQ(t.layout.scheduler, Scheduler::kSlurm);
  EXPECT_EQ(t.layout.rank, 5);
  EXPECT_EQ(value(t, "RANK"), "5");
  EXPECT_EQ(value(t, "LOCAL_RANK"), "1");
  EXPECT_EQ(value(t, "WORLD_SIZE"), "7");
  EXPECT_EQ(value(t, "LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(value(t, "GROUP_RANK"), "2");
  EXPECT_EQ(value(t, "GROUP_WORLD_SIZE"), "4");
  EXPECT_EQ(value(t, "MASTER_ADDR"), "gpu-07");
  EXPECT_EQ(value(t, "MASTER_PORT"), std::to_string(derivedMasterPort("4242", "3")));
  EXPECT_EQ(value(t, "TORCHELASTIC_RUN_ID"), "4242.3");
  EXPECT_EQ(value(t, "OMP_NUM_THREADS"), "4");  // the host's 8 CPUs / 2 tasks
  EXPECT_EQ(value(t, "DISTRUN_SCHEDULER"), "slurm");
  EXPECT_EQ(value(t, "DISTRUN_SITE"), "<unset>");
  EXPECT_TRUE(t.environment.masterPortDerived);
}

TEST(ThisTaskTest, OpenMpiRankWinsOverTheSlurmVariablesAroundIt) {
  ThisTask t = task(openMpiRank(2));
  EXPECT_EQ(t.layout.scheduler, Scheduler::kOpenMpi);
  EXPECT_EQ(value(t, "RANK"), "2");
  EXPECT_EQ(value(t, "WORLD_SIZE"), "3");
  EXPECT_EQ(value(t, "LOCAL_RANK"), "2");
  EXPECT_EQ(value(t, "LOCAL_WORLD_SIZE"), "3");
  EXPECT_EQ(value(t, "GROUP_WORLD_SIZE"), "1");
  EXPECT_EQ(value(t, "MASTER_ADDR"), "127.0.0.1");  // one node
  EXPECT_EQ(value(t, "MASTER_PORT"), std::to_string(derivedMasterPort("77", "")));
  EXPECT_EQ(value(t, "OMP_NUM_THREADS"), "2");  // 8 CPUs / 3 tasks
  EXPECT_EQ(value(t, "DISTRUN_SCHEDULER"), "openmpi");
}

TEST(ThisTaskTest, StandaloneIsAWorldOfOneOnAFreePort) {
  ThisTask t = task({});
  EXPECT_EQ(t.layout.scheduler, Scheduler::kStandalone);
  EXPECT_THAT(t.layout.hosts, ::testing::ElementsAre("gpu-09"));
  EXPECT_EQ(value(t, "RANK"), "0");
  EXPECT_EQ(value(t, "WORLD_SIZE"), "1");
  EXPECT_EQ(value(t, "LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(value(t, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(value(t, "MASTER_PORT"), std::to_string(kFreePort));
  EXPECT_EQ(value(t, "TORCHELASTIC_RUN_ID"), "none");
  EXPECT_EQ(value(t, "OMP_NUM_THREADS"), "8");
  EXPECT_EQ(value(t, "DISTRUN_SCHEDULER"), "standalone");
}

TEST(ThisTaskTest, HandDescribedWorldIsTakenAsGiven) {
  ThisTask t = task({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "6000"}});
  EXPECT_EQ(value(t, "RANK"), "1");
  EXPECT_EQ(value(t, "WORLD_SIZE"), "2");
  EXPECT_EQ(value(t, "MASTER_PORT"), "6000");
  EXPECT_EQ(t.environment.find("MASTER_PORT")->source, Source::kKept);
  EXPECT_EQ(taskError({{"RANK", "1"}, {"WORLD_SIZE", "2"}}),
            "MASTER_PORT is not set and there is no job id to derive it from: "
            "set MASTER_PORT for the 2-process world WORLD_SIZE=2 describes" +
                std::string(kClearStaleHint));
}

// A lone task keeps the user's MASTER_ADDR and MASTER_PORT, or, asked for a
// private store, replaces them with loopback and a free port.
TEST(ThisTaskTest, LoneTaskStoreIsTheUsersOrPrivate) {
  const Vars set = {{"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "6000"}};
  ThisTask kept = task(set);
  EXPECT_EQ(value(kept, "MASTER_ADDR"), "10.0.0.5");
  EXPECT_EQ(value(kept, "MASTER_PORT"), "6000");
  ThisTask own = task(set, taskOptions(LoneTaskStore::kPrivate));
  EXPECT_EQ(value(own, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(value(own, "MASTER_PORT"), std::to_string(kFreePort));
  const RankVariable* port = own.environment.find("MASTER_PORT");
  EXPECT_EQ(port->source, Source::kReplaced);
  EXPECT_EQ(port->previous, "6000");
  EXPECT_FALSE(own.environment.masterPortDerived);
}

// An salloc shell is a world of one of the job: as any task it meets on the
// job's port; a private store does not take that port.
TEST(ThisTaskTest, PrivateStoreOnlyForAWorldOfOne) {
  const Vars shell = {{"SLURM_JOB_ID", "4242"}};
  ThisTask asAny = task(shell);
  EXPECT_EQ(value(asAny, "WORLD_SIZE"), "1");
  EXPECT_EQ(value(asAny, "MASTER_ADDR"), "gpu-09");
  EXPECT_EQ(value(asAny, "MASTER_PORT"), std::to_string(derivedMasterPort("4242", "interactive")));
  ThisTask own = task(shell, taskOptions(LoneTaskStore::kPrivate));
  EXPECT_EQ(value(own, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(value(own, "MASTER_PORT"), std::to_string(kFreePort));
  ThisTask step = task(slurmStep(0, 0, 0), taskOptions(LoneTaskStore::kPrivate));
  EXPECT_EQ(value(step, "MASTER_ADDR"), "gpu-07");
  EXPECT_EQ(value(step, "MASTER_PORT"), std::to_string(derivedMasterPort("4242", "3")));
}

TEST(ThisTaskTest, SiteProfileOnlyWhenGiven) {
  ThisTaskOptions o = taskOptions();
  o.site = parseSiteProfile("set NCCL_SOCKET_IFNAME = hsn0\n", "lumi", "lumi.site");
  ThisTask t = task(slurmStep(0, 0, 0), o);
  EXPECT_EQ(t.environment.siteName, "lumi");
  EXPECT_EQ(value(t, "DISTRUN_SITE"), "lumi");
  EXPECT_EQ(value(t, "NCCL_SOCKET_IFNAME"), "hsn0");
  EXPECT_EQ(value(task(slurmStep(0, 0, 0)), "NCCL_SOCKET_IFNAME"), "<unset>");
}

TEST(ThisTaskTest, ContradictionIsAConfigErrorNamingTheVariables) {
  EXPECT_EQ(taskError(slurmStep(7, 3, 0)),
            "SLURM_PROCID=7 contradicts SLURM_STEP_NUM_TASKS=7: expected SLURM_PROCID "
            "< SLURM_STEP_NUM_TASKS" +
                std::string(kClearStaleHint));
  Vars mpi = openMpiRank(0);
  mpi["OMPI_COMM_WORLD_RANK"] = "3";
  EXPECT_EQ(taskError(mpi),
            "OMPI_COMM_WORLD_RANK=3 contradicts OMPI_COMM_WORLD_SIZE=3: expected "
            "OMPI_COMM_WORLD_RANK < OMPI_COMM_WORLD_SIZE" +
                std::string(kClearStaleHint));
  EXPECT_EQ(taskError({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "6000"}}),
            "RANK=2 contradicts WORLD_SIZE=2: expected RANK < WORLD_SIZE; if left from an "
            "earlier shell or job, clear them: eval \"$(distrun env --unset)\"");
  EXPECT_EQ(taskError({{"RANK", "3"}}),
            "RANK=3 is set but WORLD_SIZE is not; if left from an earlier shell or job, clear "
            "them: eval \"$(distrun env --unset)\"");
}

}  // namespace
}  // namespace distrun::cluster
