// Elastic jobs (`distrun run --nnodes MIN:MAX`) on the local Slurm cluster
// (label: slurm), one agent per node under `srun --no-kill`: the scenarios
// of launcher_elastic_test.cc (agents as processes) with Slurm's nodes.
// Each node's worker records every round it ran in (its world size, node
// rank and restart count) in rounds.<node name>, its pid in pids and its
// agent's in agent.<node name>, then works a few seconds, reporting
// progress, and records "done". Durations are bounded (timeout), never
// asserted.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/testing/command.h"
#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

// Long enough for any healthy wait of these jobs; reaching it fails them.
constexpr int kRecordSeconds = 60;
// The agents' rendezvous settings: a round waits 2 s for more nodes.
const std::string kRdzvConf = " --rdzv-conf last_call_timeout=2,join_timeout=10 ";
// For a test whose first round must hold every node: under load one agent
// of `srun -N3` was seen to start more than 2 s after the others.
const std::string kPatientRdzvConf = " --rdzv-conf last_call_timeout=10,join_timeout=20 ";

class ElasticSlurmFixture : public SlurmTest {
 protected:
  void SetUp() override {
    SlurmTest::SetUp();
    if (IsSkipped()) return;
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string("elastic_slurm_") + std::to_string(::getpid()) + "_" + test->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ = ::testing::TempDir() + name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // The worker, as `sh -c` runs it: records its round, pid and agent, runs
  // `before`, then works `seconds`, reporting progress (DISTRUN_PROGRESS_FD)
  // five times a second, and records "done".
  std::string worker(int seconds, const std::string& before = "") const {
    const std::string rounds = path("rounds.$SLURMD_NODENAME");
    return "sh -c " +
           quote("echo $WORLD_SIZE $GROUP_RANK $TORCHELASTIC_RESTART_COUNT >> " + rounds +
                 "; echo $$ >> " + path("pids") + "; echo $PPID > " +
                 path("agent.$SLURMD_NODENAME") + "; " + before + "i=0; while [ $i -lt " +
                 std::to_string(seconds * 5) +
                 " ]; do echo . >&3; sleep 0.2; i=$((i+1)); done; echo done >> " + rounds);
  }
  // `srun SRUN distrun run --nnodes NODES ...` of every test: one agent per
  // node, a node's loss not ending the step; `run` holds more flags.
  std::string step(const std::string& srun, const std::string& nodes, const std::string& run,
                   const std::string& rdzvConf = kRdzvConf) const {
    return "srun " + srun + " --ntasks-per-node=1 --no-kill " + distrun() + " run --nnodes " +
           nodes + " --max-restarts 2" + rdzvConf + run;
  }
  // Starts `command` under the cluster in the background, its output in
  // the test's log.
  int start(const std::string& command) const {
    return startCommand("env " + cluster_->env() + "timeout 120 " + command, path("log"));
  }
  std::vector<std::string> rounds(const std::string& node) const {
    return lines(slurp(path("rounds." + node)));
  }
  // Waits until `node`'s worker recorded `count` lines.
  bool waitForRounds(const std::string& node, size_t count) const {
    return waitForLines(path("rounds." + node), count, kRecordSeconds);
  }
  // Waits until the worker of every node of a 3-node step ran: node rank 0
  // learns its round before the others, and a node lost before they know
  // the round is another case (losing the store's then ends the job).
  void waitForEveryNode() const {
    for (const char* node : {"node1", "node2", "node3"}) {
      ASSERT_TRUE(waitForRounds(node, 1)) << node << ": " << log();
    }
  }
  // SIGKILLs `node`'s agent, as a node dies: its worker dies with it.
  void killAgent(const std::string& node) const {
    std::vector<int> agent = readInts(path("agent." + node));
    ASSERT_FALSE(agent.empty()) << "no agent recorded for " << node;
    ::kill(agent.front(), SIGKILL);
  }
  // No worker of any round and no agent is left on any node.
  void expectNothingLeft() const {
    std::vector<int> pids = readInts(path("pids"));
    ASSERT_FALSE(pids.empty()) << "no worker recorded its pid";
    for (const char* node : {"node1", "node2", "node3"}) {
      for (int agent : readInts(path(std::string("agent.") + node))) pids.push_back(agent);
    }
    for (int pid : pids) EXPECT_FALSE(processAlive(pid)) << "pid " << pid << " survived";
  }
  // What srun (or salloc) and the agents printed.
  std::string log() const { return slurp(path("log")); }

  std::string dir_;
};

// `srun -N3 --no-kill distrun run --nnodes 2:3`: the agent of one node is
// SIGKILLed mid-round (its worker dies with it); the agents of the other
// two re-form on two nodes, Slurm's node ids kept as their node ranks, and
// finish. node1's agent (Slurm's node 0) hosts the store: losing it makes
// the others find its successor. srun reports the killed task.
class ElasticSlurmTest : public ElasticSlurmFixture, public ::testing::WithParamInterface<int> {};

TEST_P(ElasticSlurmTest, AStepLosingANodeFinishesOnTheOtherTwo) {
  const std::string victim = "node" + std::to_string(GetParam() + 1);  // Slurm's node id
  int srun = start(step("-N3", "2:3", worker(8), kPatientRdzvConf));
  ASSERT_NO_FATAL_FAILURE(waitForEveryNode());
  killAgent(victim);
  waitCommand(srun);
  int survivor = 0;
  for (int node : {0, 1, 2}) {
    const std::string name = "node" + std::to_string(node + 1);
    if (name == victim) continue;
    std::vector<std::string> r = rounds(name);
    ASSERT_GE(r.size(), 3u) << log();
    EXPECT_EQ(r.front(), "3 " + std::to_string(node) + " 0") << log();
    EXPECT_EQ(r[r.size() - 2], "2 " + std::to_string(survivor++) + " 1") << log();
    EXPECT_EQ(r.back(), "done") << log();
  }
  EXPECT_THAT(log(), HasSubstr(victim == "node1" ? "the rendezvous store is now at "
                                                 : "node node3 was lost"));
  expectNothingLeft();
}

INSTANTIATE_TEST_SUITE_P(Victim, ElasticSlurmTest, ::testing::Values(2, 0));

class ElasticSlurmStepTest : public ElasticSlurmFixture {};

// node2's worker (rank 1) stops itself (SIGSTOP) in the first round; the
// others report progress. --hang-timeout 3 names rank 1 on every node, its
// failure re-forms the job on all three (restart 1), and the second round,
// where nobody stops, finishes.
TEST_F(ElasticSlurmStepTest, AStoppedWorkerIsNamedAndTheJobReformsAndFinishes) {
  const std::string stopOnce =
      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ] && [ $SLURMD_NODENAME = node2 ]; then "
      "kill -STOP $$; fi; ";
  int srun = start(step("-N3", "2:3", "--hang-timeout 3 " + worker(8, stopOnce)));
  EXPECT_EQ(waitCommand(srun), 0) << log();
  for (int node : {0, 1, 2}) {
    const std::string line =
        "distrun: node " + std::to_string(node) + ": rank 1 failed (no progress for ";
    const std::string text = log();
    ASSERT_THAT(text, HasSubstr(line));
    EXPECT_GE(std::stoi(text.substr(text.find(line) + line.size())), 3) << "--hang-timeout 3";
  }
  EXPECT_THAT(log(), HasSubstr("re-forming the job (restart 1 of 2)"));
  for (int node : {0, 1, 2}) {
    std::vector<std::string> r = rounds("node" + std::to_string(node + 1));
    ASSERT_GE(r.size(), 3u) << log();
    EXPECT_EQ(r.front(), "3 " + std::to_string(node) + " 0") << log();
    EXPECT_EQ(r[r.size() - 2], "3 " + std::to_string(node) + " 1") << "all three re-formed";
    EXPECT_EQ(r.back(), "done") << log();
  }
  expectNothingLeft();
}

// MIN 2 of 3: node3's agent is SIGKILLed, the other two re-form; then
// node2's is: node1 alone cannot re-form and its agent ends with exit 76
// within the join timeout, naming both lost nodes; nothing is left.
TEST_F(ElasticSlurmStepTest, FewerThanMinNodesLeftEndsTheJobNamingTheLostNodes) {
  int srun = start(step("-N3", "2:3", worker(kRecordSeconds)));
  ASSERT_NO_FATAL_FAILURE(waitForEveryNode());
  killAgent("node3");
  ASSERT_TRUE(waitForRounds("node1", 2)) << log();
  ASSERT_TRUE(waitForRounds("node2", 2)) << log();
  EXPECT_EQ(rounds("node1").back(), "2 0 1") << "re-formed on two nodes";
  killAgent("node2");
  EXPECT_NE(waitCommand(srun), 124) << "the step ended before its time-out: " << log();
  EXPECT_THAT(log(), HasSubstr("only 1 of the 2 nodes needed (--nnodes 2:3) joined round 2"));
  EXPECT_THAT(log(), HasSubstr("nodes lost during the job: node3, node2"));
  EXPECT_THAT(log(), HasSubstr("node1: task 0: Exited with exit code 76"));
  expectNothingLeft();
}

// A job of two nodes (`srun -N2 -w node1,node2`, MIN 2, MAX 3) is joined by
// a third started later by a second step of the same allocation (`srun -N1
// -w node3`), at the same endpoint, run id and token: the job re-forms
// with it without counting a restart. Both steps number their nodes from
// 0, so the three-node round goes by arrival.
TEST_F(ElasticSlurmStepTest, ANodeJoiningLaterIsTakenInAtTheNextRound) {
  int port = 0;
  UniqueFd probe(rdzv::listenTcp("127.0.0.1", 0, &port));
  probe.reset();
  const std::string run =
      "--rdzv-endpoint node1:" + std::to_string(port) + " --rdzv-id later " + worker(6);
  const std::string steps =
      step("-N2 -w node1,node2", "2:3", run) + " & a=$!; i=0; while [ ! -s " +
      path("rounds.node2") + " ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; " +
      step("-N1 -w node3", "2:3", run) + "; b=$?; wait $a; a=$?; echo steps $a $b; " +
      "[ $a = 0 ] && [ $b = 0 ]";
  int salloc = start("env DISTRUN_TOKEN=later salloc -N3 sh -c " + quote(steps));
  EXPECT_EQ(waitCommand(salloc), 0) << log();
  EXPECT_EQ(rounds("node1").front(), "2 0 0") << "one step's node ids: " << log();
  EXPECT_EQ(rounds("node2").front(), "2 1 0") << log();
  std::set<std::string> ranks;
  for (const char* node : {"node1", "node2", "node3"}) {
    std::vector<std::string> r = rounds(node);
    ASSERT_GE(r.size(), 2u) << log();
    EXPECT_THAT(r[r.size() - 2], ::testing::StartsWith("3 ")) << node << " taken in";
    EXPECT_THAT(r[r.size() - 2], ::testing::EndsWith(" 0")) << "no restart counted";
    EXPECT_EQ(r.back(), "done") << node;
    ranks.insert(r[r.size() - 2].substr(2, 1));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2"})) << log();
  EXPECT_THAT(log(), HasSubstr("node node3 waits to join"));
  expectNothingLeft();
}

}  // namespace
}  // namespace distrun::testing
