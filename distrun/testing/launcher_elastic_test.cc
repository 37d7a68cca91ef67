// Elastic jobs (`distrun run --nnodes MIN:MAX`) with agents as nodes of this
// machine (label: multiproc): each agent names itself by a loopback address
// of its own (--local-addr 127.0.0.N), meets the others at 127.0.0.1, and
// runs one shell worker that records each round it ran in (its world size,
// node rank and restart count) and then works for a while. An agent is
// SIGKILLed, or starts late; the others must go on. Durations are bounded
// (timeout), never asserted.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/testing/command.h"
#include "distrun/testing/launcher_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class LauncherElasticTest : public LauncherFixture {
 protected:
  void SetUp() override {
    LauncherFixture::SetUp();
    port_ = freePort();
  }
  // Starts node `n`'s agent (127.0.0.1`n + 2`: node 0 is 127.0.0.12) in the
  // background; its worker records "WORLD_SIZE GROUP_RANK
  // TORCHELASTIC_RESTART_COUNT" in rounds.<n>, runs `before`, then works
  // `seconds`, reporting progress (DISTRUN_PROGRESS_FD) five times a second.
  int startNode(int n, const std::string& nodes = "2:3", int seconds = 8,
                const std::string& extra = "", const std::string& before = "") {
    const std::string record = "echo $WORLD_SIZE $GROUP_RANK $TORCHELASTIC_RESTART_COUNT >> " +
                               path("rounds." + std::to_string(n)) + "; " + before +
                               "i=0; while [ $i -lt " + std::to_string(seconds * 5) +
                               " ]; do echo . >&3; sleep 0.2; i=$((i+1)); done";
    return startCommand("env DISTRUN_TOKEN=t timeout 120 " + distrun() + " run --nnodes " + nodes +
                            " --rdzv-endpoint 127.0.0.1:" + std::to_string(port_) +
                            " --local-addr 127.0.0.1" + std::to_string(n + 2) + " --rdzv-conf " +
                            rdzvConf_ + " --max-restarts 2 " + extra + worker(record),
                        path("agent" + std::to_string(n) + ".log"));
  }
  // SIGKILLs the agent that startCommand's `pid` (its `timeout`) runs, as
  // a node dies: its workers die with it (PR_SET_PDEATHSIG).
  static void killAgent(int pid) {
    runCommand("pkill -KILL -P " + std::to_string(pid));
    waitCommand(pid);
  }
  // Waits until node `n`'s worker recorded `rounds` rounds.
  bool waitForRounds(int n, size_t rounds) {
    for (int i = 0; i < 600; ++i) {
      if (lines("rounds." + std::to_string(n)).size() >= rounds) return true;
      ::usleep(100000);
    }
    return false;
  }
  // Waits until the log of node `n`'s agent holds `text`.
  bool waitForLog(int n, const std::string& text) {
    const std::string name = "agent" + std::to_string(n) + ".log";
    for (int i = 0; i < 600; ++i) {
      if (log(name).find(text) != std::string::npos) return true;
      ::usleep(100000);
    }
    return false;
  }
  // Where the log `name` says the store moved ("" if it does not).
  std::string newStoreIn(const std::string& name) const {
    const std::string said = "the rendezvous store is now at ";
    const std::string text = log(name);
    const size_t at = text.find(said);
    if (at == std::string::npos) return "";
    return text.substr(at + said.size(), text.find('\n', at) - at - said.size());
  }
  // The lines of `name` in the folder; none while it does not exist.
  std::vector<std::string> lines(const std::string& name) const {
    std::vector<std::string> out;
    std::ifstream file(path(name));
    for (std::string line; std::getline(file, line);) out.push_back(line);
    return out;
  }

  int port_ = 0;
  std::string rdzvConf_ = "last_call_timeout=2,join_timeout=10";
};

// The agent that hosts the store is the first to bind the endpoint: node 0
// starts first. Node 2's agent is SIGKILLed mid-round: nodes 0 and 1 re-form
// with two nodes (restart 1) and finish.
TEST_F(LauncherElasticTest, ALostNodeLeavesTheOthersTrainingOnTwoNodes) {
  int node0 = startNode(0);
  ::usleep(300000);
  int node1 = startNode(1);
  int node2 = startNode(2);
  ASSERT_TRUE(waitForRounds(2, 1)) << log("agent2.log");
  killAgent(node2);
  EXPECT_EQ(waitCommand(node0), 0) << log("agent0.log");
  EXPECT_EQ(waitCommand(node1), 0) << log("agent1.log");
  EXPECT_THAT(lines("rounds.0").front(), ::testing::StartsWith("3 ")) << "three nodes first";
  EXPECT_THAT(lines("rounds.0").back(), ::testing::EndsWith(" 1")) << "restart 1";
  EXPECT_THAT(lines("rounds.1").back(), ::testing::StartsWith("2 ")) << "two nodes after it";
  EXPECT_THAT(log("agent0.log"), HasSubstr("node 127.0.0.14 was lost"));
  expectAllGone();
}

// The store's own agent (node 0) is SIGKILLed: the others find its
// successor among the round's first nodes and finish on two nodes.
TEST_F(LauncherElasticTest, LosingTheStoresNodeLeavesTheOthersTraining) {
  int node0 = startNode(0);
  ::usleep(300000);
  int node1 = startNode(1);
  int node2 = startNode(2);
  // Every node past the first rendezvous: a store lost while the first round
  // still forms ends the job (no candidates yet: docs/launcher.md).
  for (int n : {0, 1, 2})
    ASSERT_TRUE(waitForRounds(n, 1)) << log("agent" + std::to_string(n) + ".log");
  killAgent(node0);
  EXPECT_EQ(waitCommand(node1), 0) << log("agent1.log");
  EXPECT_EQ(waitCommand(node2), 0) << log("agent2.log");
  EXPECT_THAT(log("agent1.log"), HasSubstr("the rendezvous store is now at "));
  EXPECT_THAT(lines("rounds.1").back(), ::testing::StartsWith("2 "));
  expectAllGone();
}

// Four nodes of MIN 2: node 3 is lost, and while the three others form the
// next round (waiting last_call_timeout, 8 s, for a fourth) the store's own
// node 0 is SIGKILLed too. Nodes 1 and 2 find the store's successor among
// the first round's nodes and finish on two nodes; their workers never ran
// in a round of three, and the store's loss counted no restart.
TEST_F(LauncherElasticTest, AStoreLostWhileARoundFormsIsReplacedAndTheJobGoesOn) {
  rdzvConf_ = "last_call_timeout=8,join_timeout=30";
  int node0 = startNode(0, "2:4", 4);
  ::usleep(300000);
  int node1 = startNode(1, "2:4", 4);
  int node2 = startNode(2, "2:4", 4);
  int node3 = startNode(3, "2:4", 4);
  for (int n : {0, 1, 2, 3})
    ASSERT_TRUE(waitForRounds(n, 1)) << log("agent" + std::to_string(n) + ".log");
  killAgent(node3);
  for (int n : {0, 1, 2})
    ASSERT_TRUE(waitForLog(n, "re-forming the job")) << log("agent" + std::to_string(n) + ".log");
  killAgent(node0);
  EXPECT_EQ(waitCommand(node1), 0) << log("agent1.log");
  EXPECT_EQ(waitCommand(node2), 0) << log("agent2.log");
  EXPECT_THAT(log("agent1.log"), HasSubstr("the rendezvous store was lost while round 1 formed"));
  EXPECT_THAT(newStoreIn("agent1.log"),
              ::testing::AnyOf(StartsWith("127.0.0.13:"), StartsWith("127.0.0.14:")))
      << "node 1 or node 2, whichever came first";
  EXPECT_EQ(newStoreIn("agent1.log"), newStoreIn("agent2.log")) << "one store";
  for (int n : {1, 2}) {
    EXPECT_THAT(lines("rounds." + std::to_string(n)),
                ::testing::ElementsAre(::testing::StartsWith("4 "), ::testing::StartsWith("2 ")))
        << "four nodes, then two (no round of three)";
    EXPECT_THAT(lines("rounds." + std::to_string(n)).back(), ::testing::EndsWith(" 1"))
        << "node 3's loss is the one restart";
  }
  expectAllGone();
}

// Two of MIN 2 nodes, one lost: the other cannot re-form and ends, naming
// the lost node, within the join timeout.
TEST_F(LauncherElasticTest, FewerThanMinNodesLeftEndsTheJobNamingTheLostNode) {
  int node0 = startNode(0, "2:3", 30);
  ::usleep(300000);
  int node1 = startNode(1, "2:3", 30);
  ASSERT_TRUE(waitForRounds(1, 1)) << log("agent1.log");
  killAgent(node1);
  EXPECT_EQ(waitCommand(node0), 76) << log("agent0.log");
  EXPECT_THAT(log("agent0.log"), HasSubstr("nodes lost during the job: 127.0.0.13"));
  expectAllGone();
}

// Two nodes start (MIN 2); a third comes later and waits: the job re-forms
// with it, without counting a restart.
TEST_F(LauncherElasticTest, ANodeJoiningLaterIsTakenInAtTheNextRound) {
  int node0 = startNode(0, "2:3", 10);
  ::usleep(300000);
  int node1 = startNode(1, "2:3", 10);
  ASSERT_TRUE(waitForRounds(0, 1)) << log("agent0.log");
  int node2 = startNode(2, "2:3", 10);
  EXPECT_EQ(waitCommand(node0), 0) << log("agent0.log");
  EXPECT_EQ(waitCommand(node1), 0) << log("agent1.log");
  EXPECT_EQ(waitCommand(node2), 0) << log("agent2.log");
  EXPECT_THAT(lines("rounds.0").front(), ::testing::StartsWith("2 "));
  EXPECT_THAT(lines("rounds.0").back(), ::testing::StartsWith("3 ")) << "re-formed with it";
  EXPECT_THAT(lines("rounds.0").back(), ::testing::EndsWith(" 0")) << "no restart counted";
  EXPECT_THAT(lines("rounds.2").back(), ::testing::StartsWith("3 ")) << "taken in";
  EXPECT_THAT(lines("rounds.2").back(), ::testing::EndsWith(" 0")) << "no restart counted";
  EXPECT_THAT(log("agent0.log"), HasSubstr("node 127.0.0.14 waits to join"));
  expectAllGone();
}

// Node 1's worker stops itself (SIGSTOP) in the first round: --hang-timeout
// names it, its node's failure re-forms the job (restart 1), and the second
// round, where nobody stops, finishes.
TEST_F(LauncherElasticTest, AStoppedWorkerIsNamedAndTheJobReformsAndFinishes) {
  const std::string stopOnce = "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then kill -STOP $$; fi; ";
  int node0 = startNode(0, "2:3", 4, "--hang-timeout 2 ");
  ::usleep(300000);
  int node1 = startNode(1, "2:3", 4, "--hang-timeout 2 ", stopOnce);
  EXPECT_EQ(waitCommand(node0), 0) << log("agent0.log");
  EXPECT_EQ(waitCommand(node1), 0) << log("agent1.log");
  EXPECT_THAT(log("agent0.log"), HasSubstr("rank 1 failed (no progress for "));
  EXPECT_THAT(log("agent0.log"), HasSubstr("re-forming the job (restart 1 of 2)"));
  EXPECT_THAT(lines("rounds.1").back(), ::testing::EndsWith(" 1"));
  expectAllGone();
}

// distrun-train on three nodes loses node 2 mid-training: nodes 0 and 1
// resume from the snapshot on two ranks and finish, their parameters
// identical.
TEST_F(LauncherElasticTest, TrainingLosesANodeAndFinishesOnTwo) {
  auto start = [&](int n) {
    return startCommand(
        "env DISTRUN_TOKEN=t timeout 300 " + distrun() + " run --nnodes 2:3 --rdzv-endpoint " +
            "127.0.0.1:" + std::to_string(port_) + " --local-addr 127.0.0.1" +
            std::to_string(n + 2) +
            " --rdzv-conf last_call_timeout=1,join_timeout=30 --max-restarts 2 " +
            worker("exec " + quote(binaryPath("distrun-train")) +
                   " linear --epochs 40 --batch-size 8 --threads-per-rank 1 --progress epochs "
                   "--save-every-steps 20 --snapshot " +
                   quote(path("run.snap"))),
        path("agent" + std::to_string(n) + ".log"));
  };
  int node0 = start(0);
  ::usleep(300000);
  int node1 = start(1);
  int node2 = start(2);
  for (int i = 0; i < 1200 && log("agent0.log").find("epoch 3/") == std::string::npos; ++i) {
    ::usleep(100000);
  }
  ASSERT_THAT(log("agent0.log"), HasSubstr("epoch 3/"));
  killAgent(node2);
  EXPECT_EQ(waitCommand(node0), 0) << log("agent0.log");
  EXPECT_EQ(waitCommand(node1), 0) << log("agent1.log");
  const std::string both = log("agent0.log") + log("agent1.log");
  EXPECT_THAT(both, HasSubstr("] resum")) << "resumed from the snapshot";
  EXPECT_THAT(both, HasSubstr("parameters identical on all 2 ranks"));
  expectAllGone();
}

// A fixed job (--node-rank) whose node 1 is SIGKILLed ends at once on node
// 0 with the lost node named, rather than after its workers' time-outs.
TEST_F(LauncherElasticTest, AFixedJobEndsAtOnceWhenANodesAgentIsKilled) {
  const std::string work = worker("sleep 60");
  int node0 = startCommand(
      "env DISTRUN_TOKEN=t timeout 120 " + distrun() + " run " + twoNodeFlags(0, port_) + work,
      path("agent0.log"));
  int node1 = startCommand(
      "env DISTRUN_TOKEN=t timeout 120 " + distrun() + " run " + twoNodeFlags(1, port_) + work,
      path("agent1.log"));
  for (int i = 0; i < 600 && lines("pids").size() < 2; ++i) ::usleep(100000);
  killAgent(node1);
  EXPECT_EQ(waitCommand(node0), 76) << log("agent0.log");
  EXPECT_THAT(log("agent0.log"), HasSubstr("node 1 (" + thisHostName() + ") was lost"));
  expectAllGone();
}

// Two jobs meet at one endpoint with one DISTRUN_TOKEN, each with its own
// --rdzv-id (torchrun's rule: the id separates jobs): node 0 (job A) hosts
// the store for both; each job forms its own two-node world in one round.
// Job A works until job B's agents are gone, so the store outlives job B.
TEST_F(LauncherElasticTest, TwoJobsOnOneEndpointKeepApartByTheirRunIds) {
  const std::string bDone = path("b.done");
  const std::string waitForB = "until [ -e " + bDone + " ]; do sleep 0.1; done; ";
  int a0 = startNode(0, "2:2", 1, "--rdzv-id A ", waitForB);
  ::usleep(300000);
  int b0 = startNode(1, "2:2", 1, "--rdzv-id B ");
  int a1 = startNode(2, "2:2", 1, "--rdzv-id A ", waitForB);
  int b1 = startNode(3, "2:2", 1, "--rdzv-id B ");
  EXPECT_EQ(waitCommand(b0), 0) << log("agent1.log");
  EXPECT_EQ(waitCommand(b1), 0) << log("agent3.log");
  std::ofstream(bDone) << "done\n";
  EXPECT_EQ(waitCommand(a0), 0) << log("agent0.log");
  EXPECT_EQ(waitCommand(a1), 0) << log("agent2.log");
  for (auto [first, second] : {std::pair{0, 2}, std::pair{1, 3}}) {
    const std::vector<std::string> one = lines("rounds." + std::to_string(first));
    const std::vector<std::string> two = lines("rounds." + std::to_string(second));
    ASSERT_EQ(one.size(), 1u) << "one round, no re-formation";
    ASSERT_EQ(two.size(), 1u) << "one round, no re-formation";
    EXPECT_THAT(std::vector<std::string>({one[0], two[0]}),
                ::testing::UnorderedElementsAre("2 0 0", "2 1 0"));
  }
  expectAllGone();
}

}  // namespace
}  // namespace distrun::testing
