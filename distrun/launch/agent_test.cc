#include "distrun/launch/agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"

namespace distrun::launch {
namespace {

// A one-node agent whose workers are shell commands.
class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "agent_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  AgentConfig config(int nproc, const std::string& script) {
    AgentConfig c;
    c.layout.localWorldSize = nproc;
    c.token = "t";
    c.host = "127.0.0.1";
    c.runId = "test";
    c.program = {"sh", "-c", script};
    c.termTimeout = std::chrono::seconds(20);
    c.joinTimeout = std::chrono::seconds(30);
    c.cpus = usableCpus();
    c.logDir = dir_;
    return c;
  }
  int run(const AgentConfig& c) {
    ProcessEnvironment env;  // the workers' base environment
    return Agent(c, env, err_).run();
  }
  int run(const AgentConfig& c, const ProgressProbe& probe) {
    ProcessEnvironment env;
    return Agent(c, env, err_, Agent::steadyClock(), systemProcessLauncher(), probe).run();
  }
  std::string file(const std::string& relative) {
    return readTextFile(dir_ + "/" + relative, "agent test log");
  }
  std::string dir_;
  std::ostringstream err_;
};

TEST_F(AgentTest, CleanExitOfAllWorkersIsZero) {
  EXPECT_EQ(run(config(2, "echo rank=$RANK of $WORLD_SIZE local=$LOCAL_RANK")), 0);
  EXPECT_EQ(file("test/attempt_0/0/stdout.log"), "rank=0 of 2 local=0\n");
  EXPECT_EQ(file("test/attempt_0/1/stdout.log"), "rank=1 of 2 local=1\n");
}

TEST_F(AgentTest, AStorePortInUseNamesTheFlagsThatChooseIt) {
  int held = 0;
  UniqueFd holder(rdzv::listenTcp("127.0.0.1", 0, &held));
  AgentConfig c = config(1, "true");
  c.storeHost = "127.0.0.1";
  c.storePort = held;
  try {
    run(c);
    FAIL() << "a taken port was not reported";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(),
                ::testing::HasSubstr(fmt::format(
                    "the rendezvous store's port {} is already in use on this node", held)));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("--rdzv-endpoint HOST:PORT (or --master-port)"));
  }
}

// By arrival, an agent that finds the port taken takes it for another
// agent's store, unless nothing listens there: then it says so at once,
// rather than waiting its --join-timeout out on "Connection refused".
TEST_F(AgentTest, AStorePortTakenByNoStoreIsNamedAtOnceByArrivalToo) {
  UniqueFd holder(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t size = sizeof address;
  ASSERT_EQ(::getsockname(holder.get(), reinterpret_cast<sockaddr*>(&address), &size), 0);
  const int held = ntohs(address.sin_port);  // bound, not listening: as an outgoing socket's
  AgentConfig c = config(1, "true");
  c.storeHost = "127.0.0.1";
  c.storePort = held;
  c.layout.numNodes = 2;
  c.elastic.emplace();
  c.elastic->minNodes = c.elastic->maxNodes = 2;
  c.elastic->nodeName = "127.0.0.1";
  try {
    run(c);
    FAIL() << "a port that no store holds was not reported";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith(fmt::format(
                              "the rendezvous store's port {} is taken on this node, but nothing "
                              "listens there",
                              held)));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("choose a free port with --rdzv-endpoint"));
  }
}

TEST_F(AgentTest, FirstFailureDecidesTheExitCodeAndReport) {
  int code = run(config(3, "if [ $RANK = 1 ]; then echo boom >&2; exit 7; fi; sleep 60"));
  EXPECT_EQ(code, 7);
  EXPECT_THAT(err_.str(), ::testing::HasSubstr("root cause was rank 1 (local rank 1) on node 0"));
  EXPECT_THAT(err_.str(), ::testing::HasSubstr("exit code 7"));
  EXPECT_THAT(err_.str(), ::testing::HasSubstr("  | boom\n"));
  EXPECT_THAT(file("test/failure.json"), ::testing::HasSubstr("\"exit_code\":7"));
}

TEST_F(AgentTest, SignalledWorkerGives128PlusSignal) {
  EXPECT_EQ(run(config(1, "kill -KILL $$")), 128 + 9);
  EXPECT_THAT(err_.str(), ::testing::HasSubstr("killed by signal 9 (SIGKILL)"));
}

TEST_F(AgentTest, RestartsIncrementTheRestartCount) {
  // Rank 0 reports and succeeds; rank 1 fails the first two attempts, but
  // only once rank 0's line is in its log, so fail-fast cannot cut it off.
  AgentConfig c = config(2,
                         "echo $TORCHELASTIC_RESTART_COUNT/$TORCHELASTIC_MAX_RESTARTS; "
                         "[ $RANK = 0 ] || [ $TORCHELASTIC_RESTART_COUNT = 2 ] && exit 0; "
                         "while [ ! -s " +
                             dir_ +
                             "/test/attempt_$TORCHELASTIC_RESTART_COUNT/0/stdout.log ]; "
                             "do sleep 0.01; done; exit 5");
  c.maxRestarts = 2;
  EXPECT_EQ(run(c), 0);
  EXPECT_EQ(file("test/attempt_0/0/stdout.log"), "0/2\n");
  EXPECT_EQ(file("test/attempt_2/1/stdout.log"), "2/2\n");
  EXPECT_THAT(err_.str(), ::testing::HasSubstr("restarting all workers (restart 2 of 2)"));
}

TEST_F(AgentTest, RestartsRunOut) {
  AgentConfig c = config(1, "exit 4");
  c.maxRestarts = 1;
  EXPECT_EQ(run(c), 4);
  EXPECT_THAT(err_.str(), ::testing::HasSubstr("(restart 1 of 1)"));
}

// Stands in for /proc: the worker whose pid is in `stoppedPidFile` is
// stopped and uses no CPU; every other one uses more at each sample.
class StoppedWorkerProbe : public ProgressProbe {
 public:
  explicit StoppedWorkerProbe(std::string stoppedPidFile) : file_(std::move(stoppedPidFile)) {}
  std::map<int, GroupUsage> usage(const std::set<int>& groups) const override {
    int stopped = 0;
    std::ifstream(file_) >> stopped;
    std::map<int, GroupUsage> out;
    ++ticks_;
    for (int group : groups) {
      bool isStopped = stopped == group;
      out[group] = isStopped ? GroupUsage{5, true} : GroupUsage{ticks_, false};
    }
    return out;
  }

 private:
  std::string file_;
  mutable long long ticks_ = 0;
};

TEST_F(AgentTest, TheProbesStoppedWorkerIsNamedWithExit75) {
  AgentConfig c = config(2, "echo $$ > " + dir_ + "/pid$RANK; sleep 60");
  c.hangTimeout = std::chrono::seconds(1);
  EXPECT_EQ(run(c, StoppedWorkerProbe(dir_ + "/pid1")), 75) << err_.str();
  EXPECT_THAT(err_.str(),
              ::testing::HasSubstr("root cause was rank 1 (local rank 1) on node 0 (127.0.0.1), "
                                   "pid " +
                                   std::to_string(std::stoi(file("pid1"))) +
                                   ", stopped by a signal (state T), no progress for "));
  EXPECT_THAT(file("test/failure.json"), ::testing::HasSubstr("\"stopped\":true"));
}

}  // namespace
}  // namespace distrun::launch
