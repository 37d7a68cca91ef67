// Open MPI's mpirun as the scheduler (label: mpi).
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

using nlohmann::json;

TEST(MpiTest, MpirunThreeRanksEveryTaskSeesTheWorld) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  CommandResult r = runCommand("timeout 60 mpirun --allow-run-as-root --oversubscribe -np 3 " +
                               quote(binaryPath("distrun")) + " env --format json");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 3u) << r.out;
  std::set<std::string> ranks, ports;
  for (const std::string& line : out) {
    json view = json::parse(line);
    const json& env = view["env"];
    EXPECT_EQ(view["scheduler"], "openmpi");
    EXPECT_EQ(env["WORLD_SIZE"], "3");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "3");
    EXPECT_EQ(env["LOCAL_RANK"], env["RANK"]);
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "1");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    ranks.insert(env["RANK"].get<std::string>());
    ports.insert(env["MASTER_PORT"].get<std::string>());
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"}));
  EXPECT_EQ(ports.size(), 1u) << "every rank must derive the same port";
}

std::string mpirun(int ranks) {
  return "timeout 120 mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) +
         " ";
}

// `mpirun -np 3 distrun bench allreduce`: every rank joins through the
// Open MPI layout (gloo) or MPI_COMM_WORLD (mpi); nothing is wrong. On one
// node, --backend auto (the default) is gloo through shared memory.
TEST(MpiTest, BenchAllreduceUnderMpirunHasNoWrongValues) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  for (const auto& [backend, used] : {std::pair{"gloo", "gloo, 3 ranks, over shared memory"},
                                      std::pair{"mpi", "mpi, 3 ranks; reductions in "},
                                      std::pair{"auto", "gloo, 3 ranks, over shared memory"}}) {
    CommandResult r =
        runCommand(mpirun(3) + quote(binaryPath("distrun")) +
                   " bench allreduce -b 1K -e 1M -f 4 -n 3 -w 1 --backend " + backend);
    ASSERT_EQ(r.exitCode, 0) << backend << ": " << r.err;
    EXPECT_THAT(r.out, ::testing::HasSubstr(std::string("backend ") + used));
    EXPECT_THAT(r.out, ::testing::HasSubstr("# Out of bounds values : 0 OK"));
    size_t rows = 0;
    for (const std::string& line : lines(r.out)) {
      if (line[0] == '#') continue;
      ++rows;
      EXPECT_THAT(line, ::testing::EndsWith("      0")) << line;  // #wrong 0
    }
    EXPECT_EQ(rows, 6u) << r.out;  // 1K 4K 16K 64K 256K 1M
  }
}

// `mpirun -np 3 distrun-train linear`, no `distrun exec` between: each rank
// takes its place from the Open MPI layout (gloo) or from MPI_COMM_WORLD
// (mpi), and the three train as one world.
TEST(MpiTest, DistrunTrainUnderMpirunTrainsAsOneWorld) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  for (const char* backend : {"gloo", "mpi"}) {
    CommandResult r = runCommand(mpirun(3) + quote(binaryPath("distrun-train")) +
                                 " linear --epochs 2 --progress epochs --backend " + backend);
    ASSERT_EQ(r.exitCode, 0) << backend << ": " << r.err;
    size_t summaries = 0;
    for (const std::string& line : lines(r.out)) {
      if (line.starts_with("distrun-train: linear on")) ++summaries;
    }
    EXPECT_EQ(summaries, 1u) << backend << ": " << r.out;
    EXPECT_THAT(r.out, ::testing::HasSubstr("distrun-train: linear on 3 ranks, 2 epochs"));
    EXPECT_THAT(r.out, ::testing::HasSubstr("parameters identical on all 3 ranks"));
  }
}

// Each rank's "RANK OMP_NUM_THREADS" under `mpirun -np 2 distrun exec`,
// run after `setup` in the same shell, sorted by rank.
std::vector<std::string> ranksThreads(const std::string& setup) {
  const std::string distrun = quote(binaryPath("distrun"));
  CommandResult r =
      runCommand(setup + mpirun(2) + distrun +
                 " exec -- sh -c 'echo \"$RANK $OMP_NUM_THREADS $DISTRUN_ENV_SET\"' | sort");
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return lines(r.out);
}

// Issue 32 item 3: after eval "$(distrun env)" (a world of one with all of
// this host's CPUs) the ranks derive their threads as in a clean shell; a
// count the user exported since is kept.
TEST(MpiTest, ExecAfterEvalOfDistrunEnvDerivesThreadsPerRank) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  const std::string eval = "eval \"$(" + quote(binaryPath("distrun")) + " env)\" && ";
  const std::vector<std::string> clean = ranksThreads("");
  ASSERT_EQ(clean.size(), 2u);
  EXPECT_EQ(ranksThreads(eval), clean);
  EXPECT_EQ(ranksThreads(eval + "export OMP_NUM_THREADS=3 && "),
            (std::vector<std::string>{"0 3 ", "1 3 "}));
}

// The Communicator contract for the MPI backend, ranks as processes.
TEST(MpiTest, MpiBackendKeepsTheCommunicatorContract) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  for (int ranks = 1; ranks <= 4; ++ranks) {
    CommandResult r =
        runCommand(mpirun(ranks) + quote(binaryPath("comm_contract_worker")) + " mpi");
    if (r.err.find("built without MPI") != std::string::npos) {
      GTEST_SKIP() << "this build has no MPI backend: " << r.err;
    }
    EXPECT_EQ(r.exitCode, 0) << ranks << " ranks: " << r.err;
    EXPECT_EQ(lines(r.out).size(), static_cast<size_t>(ranks)) << r.out;
  }
}

// The contract again with MPI initialised at its lowest thread level
// (DISTRUN_COMM_MPI_THREADS=single): asynchronous operations complete on
// the caller's thread, with the same results.
TEST(MpiTest, MpiBackendKeepsTheContractAtTheSingleThreadLevel) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  CommandResult r =
      runCommand("DISTRUN_COMM_MPI_THREADS=single " + mpirun(3) + "-x " +
                 "DISTRUN_COMM_MPI_THREADS " + quote(binaryPath("comm_contract_worker")) + " mpi");
  if (r.err.find("built without MPI") != std::string::npos) {
    GTEST_SKIP() << "this build has no MPI backend: " << r.err;
  }
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(lines(r.out).size(), 3u) << r.out;
}

// The contract on a hierarchical communicator with MPI between the nodes
// and Gloo's shared memory within each (hierarchical(shm, mpi)): nodes of
// unequal size, and nodes whose ranks interleave.
TEST(MpiTest, HierarchicalOverMpiKeepsTheCommunicatorContract) {
  if (runCommand("command -v mpirun").exitCode != 0) {
    GTEST_SKIP() << "mpirun is not installed (scripts/install-deps)";
  }
  for (const std::string layout : {"aab", "abab"}) {
    CommandResult r =
        runCommand(mpirun(static_cast<int>(layout.size())) +
                   quote(binaryPath("comm_contract_worker")) + " hierarchical " + layout);
    if (r.err.find("built without MPI") != std::string::npos) {
      GTEST_SKIP() << "this build has no MPI backend: " << r.err;
    }
    EXPECT_EQ(r.exitCode, 0) << layout << ": " << r.err;
    EXPECT_EQ(lines(r.out).size(), layout.size()) << r.out;
    EXPECT_THAT(r.out, ::testing::HasSubstr("(hierarchical, ")) << r.out;
    EXPECT_THAT(r.out, ::testing::HasSubstr("mpi between them")) << r.out;
  }
}

}  // namespace
}  // namespace distrun::testing
