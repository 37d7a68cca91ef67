// Against a real Slurm cluster started on this machine (label: slurm).

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/hostlist_generator.h"
#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using nlohmann::json;

// scontrol prints "Invalid hostlist" (exit 0) or errors on stderr.
bool scontrolRejects(const CommandResult& r) {
  return r.exitCode != 0 || r.err.find("Invalid") != std::string::npos ||
         r.out.find("Invalid hostlist") != std::string::npos ||
         r.err.find("error") != std::string::npos;
}

TEST_F(SlurmTest, HostnamesMatchScontrolOnGeneratedLists) {
  HostlistGenerator generator(20261121);
  int compared = 0;
  for (int i = 0; i < 300; ++i) {
    std::string list = generator.next();
    CommandResult oracle = slurm("scontrol show hostnames " + quote(list));
    CommandResult ours = runCommand(distrun() + " hostnames " + quote(list));
    if (scontrolRejects(oracle)) {
      EXPECT_NE(ours.exitCode, 0) << "scontrol rejects '" << list << "'";
      continue;
    }
    ASSERT_EQ(ours.exitCode, 0) << list << ": " << ours.err;
    ASSERT_EQ(ours.out, oracle.out) << "list: " << list;
    ++compared;
  }
  EXPECT_GE(compared, 250);
}

TEST_F(SlurmTest, CompressedListsExpandBackUnderScontrol) {
  HostlistGenerator generator(7);
  for (int i = 0; i < 60; ++i) {
    std::string list = generator.next();
    CommandResult expanded = runCommand(distrun() + " hostnames " + quote(list));
    ASSERT_EQ(expanded.exitCode, 0) << list;
    CommandResult compressed = runCommand(distrun() + " hostnames --compress " + quote(list));
    ASSERT_EQ(compressed.exitCode, 0) << list;
    std::string shorter(compressed.out.substr(0, compressed.out.size() - 1));
    CommandResult oracle = slurm("scontrol show hostnames " + quote(shorter));
    EXPECT_EQ(oracle.out, expanded.out) << list << " -> " << shorter;
  }
}

TEST_F(SlurmTest, ErrorsAgreeWithScontrolOnMalformedLists) {
  for (const char* list : {"a[2-1]", "a[1-[2-3]]", "a[1-x]", "a[x]", "[a]", "a[]", "a[1,,2]",
                           "a[-1]", "a[1--3]", "a[1-3]]", "a[0-65536]", "a[1.5]", "[1-2][x]"}) {
    CommandResult oracle = slurm("scontrol show hostnames " + quote(list));
    EXPECT_TRUE(scontrolRejects(oracle)) << list << ": " << oracle.out;
    CommandResult ours = runCommand(distrun() + " hostnames " + quote(list));
    EXPECT_EQ(ours.exitCode, 78) << list;
    EXPECT_THAT(ours.err, ::testing::StartsWith("distrun: error: invalid hostlist '" +
                                                std::string(list) + "': expected "));
  }
}

TEST_F(SlurmTest, SrunTwoNodesThreeTasksEveryTaskSeesTheWorld) {
  std::map<int, json> views = envPerRank("-N2 -n3");
  ASSERT_EQ(views.size(), 3u);
  std::set<std::string> ports, runIds;
  // Block distribution: node1 runs ranks 0 and 1, node2 runs rank 2.
  const int kLocalRank[] = {0, 1, 0}, kLocalWorld[] = {2, 2, 1}, kGroupRank[] = {0, 0, 1};
  for (const auto& [rank, view] : views) {
    const json& env = view["env"];
    EXPECT_EQ(view["scheduler"], "slurm");
    EXPECT_EQ(view["hosts"], json({"node1", "node2"}));
    EXPECT_EQ(env["WORLD_SIZE"], "3");
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(kLocalRank[rank]));
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], std::to_string(kLocalWorld[rank]));
    EXPECT_EQ(env["GROUP_RANK"], std::to_string(kGroupRank[rank]));
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "2");
    EXPECT_EQ(env["ROLE_RANK"], std::to_string(rank));
    EXPECT_EQ(env["MASTER_ADDR"], "node1");
    EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
    ports.insert(env["MASTER_PORT"].get<std::string>());
    runIds.insert(env["TORCHELASTIC_RUN_ID"].get<std::string>());
  }
  EXPECT_EQ(ports.size(), 1u) << "every task must derive the same port";
  EXPECT_EQ(runIds.size(), 1u);
}

TEST_F(SlurmTest, UnevenCyclicStepUsesSchedulerIds) {
  // Slurm's own placement of the same request is the oracle: with -N3 -n5
  // it puts 3 tasks on node 0, and cyclic order makes ranks 0, 3, 4 share it.
  const std::string flags = "-N3 -n5 --distribution=cyclic";
  CommandResult oracle =
      slurm("timeout 60 srun " + flags + " printenv SLURM_PROCID SLURM_NODEID SLURM_LOCALID");
  ASSERT_EQ(oracle.exitCode, 0) << oracle.err;
  std::vector<std::string> ids = lines(oracle.out);
  ASSERT_EQ(ids.size(), 15u);
  std::map<int, std::pair<int, int>> placement;  // rank -> node, local rank
  std::map<int, int> tasksOnNode;
  for (size_t i = 0; i < ids.size(); i += 3) {
    int node = std::stoi(ids[i + 1]);
    placement[std::stoi(ids[i])] = {node, std::stoi(ids[i + 2])};
    ++tasksOnNode[node];
  }
  ASSERT_NE(placement[1].first, placement[0].first) << "not a cyclic placement";
  std::map<int, json> views = envPerRank(flags);
  ASSERT_EQ(views.size(), 5u);
  for (const auto& [rank, view] : views) {
    const json& env = view["env"];
    auto [node, local] = placement.at(rank);
    EXPECT_EQ(env["GROUP_RANK"], std::to_string(node)) << rank;
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(local)) << rank;
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], std::to_string(tasksOnNode[node])) << rank;
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "3");
    EXPECT_EQ(env["MASTER_ADDR"], "node1");
  }
}

TEST_F(SlurmTest, SrunOneAgentPerNodeRunsTwoWorkersEach) {
  CommandResult r =
      slurm("timeout 120 srun -N2 --ntasks-per-node=1 " + distrun() +
            " run --nproc-per-node 2 sh -c "
            "'echo $RANK $LOCAL_RANK $GROUP_RANK $WORLD_SIZE $MASTER_ADDR $TORCHELASTIC_RUN_ID'");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<std::string> out = lines(r.out);
  std::sort(out.begin(), out.end());
  ASSERT_EQ(out.size(), 4u) << r.out;
  // Prefix [node:rank], then rank, local rank, node, world, master, run id.
  const char* expected[] = {"[0:0] 0 0 0 4 node1", "[0:1] 1 1 0 4 node1", "[1:2] 2 0 1 4 node1",
                            "[1:3] 3 1 1 4 node1"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i].rfind(expected[i], 0), 0u) << out[i];
  }
}

TEST_F(SlurmTest, SrunAgentFailureStopsEveryNode) {
  CommandResult r = slurm("timeout 120 srun -N2 --ntasks-per-node=1 " + distrun() +
                          " run --nproc-per-node 2 sh -c '[ $RANK = 3 ] && exit 5; sleep 300'");
  EXPECT_EQ(r.exitCode, 5) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("root cause was rank 3 (local rank 1) on node 1"));
}

TEST_F(SlurmTest, TwoStepsGetDifferentPorts) {
  std::string a = envPerRank("-N1 -n1")[0]["env"]["MASTER_PORT"];
  std::string b = envPerRank("-N1 -n1")[0]["env"]["MASTER_PORT"];
  EXPECT_NE(a, b);
}

// `srun -N2 -n4 distrun bench allreduce`: four tasks on two nodes join
// one Gloo world through MASTER_ADDR/MASTER_PORT derived from the step, and
// reduce within each node through shared memory, between them over TCP.
TEST_F(SlurmTest, SrunBenchAllreduceTwoNodesFourTasks) {
  CommandResult r = slurm("timeout 120 srun -N2 -n4 " + distrun() +
                          " bench allreduce -b 1K -e 256K -f 4 -n 3 -w 1");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("backend gloo, 4 ranks, over shared memory within "
                                          "each of 2 nodes, tcp between them"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("# Out of bounds values : 0 OK"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("#  Rank  3 Pid"));
  size_t rows = 0;
  for (const std::string& line : lines(r.out)) {
    if (line[0] == '#') continue;
    ++rows;
    EXPECT_THAT(line, ::testing::EndsWith("      0")) << line;
  }
  EXPECT_EQ(rows, 5u) << r.out;  // 1K 4K 16K 64K 256K
}

// `srun -N2 -n4 distrun exec comm_contract_worker gloo`: the whole
// Communicator contract (every collective, type, op and layout, send and
// recv) on the hierarchical path the step's layout gives: shared memory
// within each of the two nodes, TCP between their leaders.
TEST_F(SlurmTest, SrunContractTwoNodesFourTasksTakesTheHierarchicalPath) {
  CommandResult r = slurm("timeout 540 srun -N2 -n4 " + distrun() + " exec " +
                          quote(binaryPath("comm_contract_worker")) + " gloo");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_THAT(r.out, ::testing::HasSubstr("contract ok rank " + std::to_string(rank) +
                                            " of 4 (gloo, shared memory within each of 2 "
                                            "nodes, tcp between them"))
        << r.out;
  }
}

// `srun -N2 -n3 distrun-train linear`, with no `distrun exec` between: each
// task takes its place in the step itself, and the three train as one
// world (alone, each would train a world of one and print its own summary).
TEST_F(SlurmTest, SrunDistrunTrainWithoutExecTrainsAsOneWorld) {
  CommandResult r = slurm("timeout 120 srun -N2 -n3 " + quote(binaryPath("distrun-train")) +
                          " linear --epochs 2 --progress epochs");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  size_t summaries = 0;
  for (const std::string& line : lines(r.out)) {
    if (line.starts_with("distrun-train: linear on")) ++summaries;
  }
  EXPECT_EQ(summaries, 1u) << r.out;
  EXPECT_THAT(r.out, ::testing::HasSubstr("distrun-train: linear on 3 ranks, 2 epochs"));
  EXPECT_THAT(r.out, ::testing::HasSubstr("parameters identical on all 3 ranks"));
}

// A test killed at its time limit cannot stop its cluster: the script's
// watcher does, once the process that started it is gone.
TEST(LocalSlurmClusterTest, AKilledOwnerLeavesNoDaemonsBehind) {
  const std::string reason = LocalSlurmCluster::unavailableReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const std::string dir = ::testing::TempDir() + "killed-owner-" + std::to_string(::getpid());
  const std::string pids = dir + ".pids";
  CommandResult owner = runCommand(
      "bash -c " + quote("bash " + quote(sourcePath("distrun/testing/local_slurm.sh")) + " start " +
                         quote(dir) + " 1 $$ >/dev/null && cat " + quote(dir) + "/*.pid " +
                         quote(dir) + "/munge/munged.pid > " + quote(pids) + " && kill -9 $$"));
  ASSERT_EQ(owner.exitCode, 128 + SIGKILL) << owner.out << owner.err;
  const std::vector<std::string> daemons = lines(runCommand("cat " + quote(pids)).out);
  EXPECT_EQ(daemons.size(), 4u) << "slurmctld, 2 slurmd, munged";
  bool gone = false;
  for (int i = 0; i < 600 && !gone; ++i) {
    gone = !std::filesystem::exists(dir) &&
           std::none_of(daemons.begin(), daemons.end(),
                        [](const std::string& pid) { return ::kill(std::stoi(pid), 0) == 0; });
    if (!gone) ::usleep(100000);
  }
  EXPECT_TRUE(gone) << "daemons or " << dir << " left a minute after their owner was killed";
  std::filesystem::remove(pids);
}

// A cluster stopped while a job still runs leaves nothing behind: not the
// step daemons (slurmstepd has no pid file and outlives slurmd, retrying for
// good to report its step's end), not the job's tasks. The pattern waited for
// matches srun as well as its task, so the stop may come while slurmd is still
// launching the step: a step daemon that appears after the stop's first
// search for them must be found too.
TEST(LocalSlurmClusterTest, StoppingItWhileAJobRunsLeavesNoProcess) {
  if (const std::string why = LocalSlurmCluster::unavailableReason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  std::string conf;
  {
    LocalSlurmCluster cluster(1);
    conf = cluster.dir() + "/slurm.conf";
    ASSERT_EQ(runCommand(cluster.env() + "sbatch -N1 --wrap 'srun sleep 317'").exitCode, 0);
    // "slee[p]": the pattern does not match the shell that runs pgrep.
    ASSERT_EQ(runCommand("for i in $(seq 150); do pgrep -f 'slee[p] 317$' >/dev/null && exit 0; "
                         "sleep 0.2; done; exit 1")
                  .exitCode,
              0)
        << "the job's task never started";
  }
  const CommandResult left = runCommand(
      "pgrep -af 'slee[p] 317'; for p in $(pgrep -x slurmstepd); do "
      "tr '\\0' '\\n' <\"/proc/$p/environ\" 2>/dev/null | grep -qxF " +
      quote("SLURM_CONF=" + conf) + " && echo \"slurmstepd $p\"; done; true");
  EXPECT_EQ(left.out, "");
}

// The race behind the test above, made certain: a step daemon that forks
// without pause (a copy of bash named slurmstepd, with the cluster's
// configuration in its environment) has a child that no reading of the
// process table saw; the stop must kill that child too. Needs no cluster.
TEST(LocalSlurmClusterTest, StoppingItKillsAChildForkedWhileTheStepsAreRead) {
  const std::string dir = ::testing::TempDir() + "forking-step-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/cluster");
  std::filesystem::copy_file("/bin/bash", dir + "/slurmstepd");
  const std::string marker = "slee[p] 3" + std::to_string(::getpid() % 1000) + "1$";
  const std::string task = "sleep 3" + std::to_string(::getpid() % 1000) + "1";
  const CommandResult stop = runCommand(
      "SLURM_CONF=" + quote(dir + "/cluster/slurm.conf") + " setsid " + quote(dir + "/slurmstepd") +
      " -c " + quote("while :; do " + task + " & kill $! 2>/dev/null; done") +
      " </dev/null >/dev/null 2>&1 & sleep 1; bash " +
      quote(sourcePath("distrun/testing/local_slurm.sh")) + " stop " + quote(dir + "/cluster") +
      "; sleep 0.5; pgrep -af " + quote(marker) + "; pgrep -f " + quote("^" + dir + "/slurmstepd") +
      " && echo 'the step daemon'; true");
  runCommand("pkill -9 -f " + quote(marker) + "; pkill -9 -f " + quote("^" + dir + "/slurmstepd"));
  std::filesystem::remove_all(dir);
  EXPECT_EQ(stop.out, "");
}

}  // namespace
}  // namespace distrun::testing
