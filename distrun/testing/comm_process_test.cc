// The communication layer and `distrun bench` with ranks as processes
// (label: multiproc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/common/system.h"
#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

std::string distrun() { return quote(binaryPath("distrun")); }

// The Communicator contract, Gloo backend, ranks as processes started by
// `distrun run` (meeting through the agent's store).
TEST(CommProcessTest, GlooContractUnderDistrunRun) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    CommandResult r =
        runCommand("timeout 300 " + distrun() + " run --nproc-per-node " + std::to_string(ranks) +
                   " " + quote(binaryPath("comm_contract_worker")) + " gloo");
    EXPECT_EQ(r.exitCode, 0) << ranks << " ranks: " << r.err;
    EXPECT_EQ(lines(r.out).size(), static_cast<size_t>(ranks)) << r.out;
  }
}

// The contract again with every allgather, alltoall, allreduce and
// broadcast reading the peers' buffers straight from their processes
// (process_vm_readv), as some sizes do by default: the ranks are separate
// processes here.
TEST(CommProcessTest, GlooContractWithDirectReadsOfThePeers) {
  CommandResult r = runCommand(
      "DISTRUN_COMM_SHM_DIRECT_FROM=0 DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_FROM=0 "
      "DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_BELOW=1099511627776 "
      "DISTRUN_COMM_SHM_DIRECT_BROADCAST_FROM=0 "
      "DISTRUN_COMM_SHM_DIRECT_BROADCAST_BELOW=1099511627776 timeout 300 " +
      distrun() + " run --nproc-per-node 3 " + quote(binaryPath("comm_contract_worker")) + " gloo");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(lines(r.out).size(), 3u) << r.out;
  EXPECT_THAT(r.out, HasSubstr("read from the peers directly")) << r.out;
}

// The contract with every allreduce and allgather going the way rank 0
// timed faster (chooseAllreducePathFrom, chooseAllgatherPathFrom), so that
// the way changes between calls of every size: 3 ranks as processes must
// take the same way each call, or they fail as a mismatch.
TEST(CommProcessTest, GlooContractWithTheWayOfEveryCallChosenByTime) {
  CommandResult r = runCommand(
      "DISTRUN_COMM_SHM_DIRECT_FROM=0 DISTRUN_COMM_SHM_ALLREDUCE_CHOICE_FROM=0 "
      "DISTRUN_COMM_SHM_ALLGATHER_CHOICE_FROM=0 timeout 300 " +
      distrun() + " run --nproc-per-node 3 " + quote(binaryPath("comm_contract_worker")) + " gloo");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(lines(r.out).size(), 3u) << r.out;
}

// Two agents on this machine as the two nodes of one job, two ranks each:
// the ranks take the hierarchical path (shared memory within each node,
// TCP between the leaders) and pass the whole contract.
TEST(CommProcessTest, GlooContractOnTwoAgentsAsTwoNodes) {
  const int port = pickFreeTcpPort();
  const std::string dir = ::testing::TempDir() + "/nodes" + std::to_string(port);
  runCommand("mkdir -p " + quote(dir));
  std::vector<int> agents;
  for (int n = 0; n < 2; ++n) {
    agents.push_back(startCommand(
        "env DISTRUN_TOKEN=t timeout 300 " + distrun() +
            " run --nnodes 2 --nproc-per-node 2 --rdzv-endpoint 127.0.0.1:" + std::to_string(port) +
            " " + quote(binaryPath("comm_contract_worker")) + " gloo",
        dir + "/agent" + std::to_string(n)));
  }
  std::string out;
  for (int n = 0; n < 2; ++n) {
    const int code = waitCommand(agents[static_cast<size_t>(n)]);
    const std::string log = runCommand("cat " + quote(dir + "/agent" + std::to_string(n))).out;
    EXPECT_EQ(code, 0) << "agent " << n << ": " << log;
    out += log;
  }
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT(out, HasSubstr("contract ok rank " + std::to_string(r) +
                               " of 4 (gloo, shared memory within each of 2 nodes, tcp "
                               "between them, large blocks and messages read from the peers "
                               "directly)"))
        << out;
  }
}

// Rank 3 of 4 dies mid-job (SIGKILL): every other rank fails within
// seconds with exit 69 and names rank 3, its host and pid; none hangs.
// The collectives through shared memory (DISTRUN_COMM_SHM=1, the default
// on one host), through TCP, and hierarchical (ranks 0-1 and 2-3 on two
// nodes of this machine: rank 3 shares memory with rank 2, which leads
// its node).
class DeadPeerTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string layout(int r) const {
    if (GetParam() == "two_nodes") {
      return " LOCAL_WORLD_SIZE=2 GROUP_RANK=" + std::to_string(r / 2) + " DISTRUN_COMM_SHM=1";
    }
    return std::string(" LOCAL_WORLD_SIZE=4 DISTRUN_COMM_SHM=") +
           (GetParam() == "shared_memory" ? "1" : "0");
  }
};

TEST_P(DeadPeerTest, IsNamedByEveryRank) {
  const int port = pickFreeTcpPort();
  const std::string dir = ::testing::TempDir() + "/lose" + std::to_string(port);
  runCommand("mkdir -p " + quote(dir));
  std::vector<int> pids;
  for (int r = 0; r < 4; ++r) {
    pids.push_back(startCommand("env RANK=" + std::to_string(r) + " WORLD_SIZE=4" + layout(r) +
                                    " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
                                    " DISTRUN_COMM_TIMEOUT=60 timeout 60 " +
                                    quote(binaryPath("comm_contract_worker")) + " gloo lose 3",
                                dir + "/rank" + std::to_string(r)));
  }
  for (int r = 0; r < 4; ++r) {
    const int code = waitCommand(pids[static_cast<size_t>(r)]);
    std::string log = runCommand("cat " + quote(dir + "/rank" + std::to_string(r))).out;
    if (r == 3) {
      EXPECT_EQ(code, 137);
      continue;
    }
    EXPECT_EQ(code, 69) << "rank " << r << ": " << log;
    EXPECT_THAT(log, HasSubstr("lost rank 3 (host ")) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, DeadPeerTest,
                         ::testing::Values("shared_memory", "tcp", "two_nodes"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(CommProcessTest, BareBenchLaunchesTwoRanksOfItself) {
  CommandResult r =
      runCommand("timeout 120 " + distrun() + " bench all_reduce -b 1K -e 64K -f 4 -n 3 -w 1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("# distrun bench all_reduce"));
  EXPECT_THAT(r.out, HasSubstr("backend gloo, 2 ranks"));
  EXPECT_THAT(r.out, HasSubstr("#  Rank  1 Pid"));
  EXPECT_THAT(r.out, HasSubstr("# Out of bounds values : 0 OK"));
  EXPECT_THAT(r.out, HasSubstr("# Avg bus bandwidth    : "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("[0:0]")));  // no agent prefix
}

TEST(CommProcessTest, BenchJsonUnderDistrunRunCoversEveryCollective) {
  for (const char* collective :
       {"all_reduce", "broadcast", "all_gather", "reduce_scatter", "alltoall", "sendrecv"}) {
    CommandResult r =
        runCommand("timeout 120 " + distrun() + " run --log-prefix '' --nproc-per-node 3 " +
                   quote(binaryPath("distrun-bench")) + " " + collective +
                   " -b 8 -e 8K -f 8 -n 2 -w 1 -d all --format json");
    ASSERT_EQ(r.exitCode, 0) << collective << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ranks"], 3);
    EXPECT_EQ(j["out_of_bounds"]["count"], 0) << collective;
    EXPECT_EQ(j["results"].size(), 6u * 4u) << collective;  // 6 types x 8 64 512 4096
  }
}

TEST(CommProcessTest, BenchPiIsTheFirstThingToRun) {
  CommandResult r =
      runCommand("timeout 120 " + distrun() + " bench pi --intervals 1000000 --nproc-per-node 3");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pi = 3.14159265358"));
  EXPECT_THAT(r.out, HasSubstr("(1000000 intervals on 3 ranks, gloo,"));
}

// Issue 32 item 3: after the README's eval "$(distrun env)" (RANK=0,
// WORLD_SIZE=1 in the shell) a bare bench still starts its own world.
TEST(CommProcessTest, BenchPiAfterEvalOfDistrunEnvStartsItsOwnWorld) {
  CommandResult r = runCommand("eval \"$(" + distrun() + " env)\" && timeout 120 " + distrun() +
                               " bench pi --intervals 1000000 --nproc-per-node 3");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(1000000 intervals on 3 ranks, gloo,"));
  EXPECT_EQ(r.err, "");
}

TEST(CommProcessTest, BenchFlagErrorsAreOneLine) {
  CommandResult r = runCommand(distrun() + " bench all_reduce -e 1T");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_EQ(r.err,
            "distrun: error: -e '1T' is not a size (expected a number with an "
            "optional K, M or G suffix)\n");
  r = runCommand(distrun() + " bench hypercube");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_THAT(r.err, HasSubstr("COLLECTIVE 'hypercube' is not one of: all_reduce, broadcast"));
  r = runCommand(distrun() + " bench all_reduce --backend mpi");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_THAT(r.err, HasSubstr("--backend mpi needs an MPI launcher: mpirun -np 2"));
  r = runCommand("timeout 60 " + distrun() + " bench broadcast -r 5");
  EXPECT_EQ(r.exitCode, 64);
  EXPECT_THAT(r.err, HasSubstr("distrun: error: -r 5 is not a rank of this 2-rank job"));
}

}  // namespace
}  // namespace distrun::testing
