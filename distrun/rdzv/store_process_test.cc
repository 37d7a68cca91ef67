// Store succession and the last will with agents as processes killed by
// SIGKILL (store_succession_test.cc and store_will_test.cc run the same
// rules in one process). Each agent is forked before the test starts any
// thread and takes one-line commands on a pipe.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/store_succession.h"
#include "distrun/rdzv/store_testing.h"

namespace distrun::rdzv {
namespace {

using namespace std::chrono_literals;
using store_testing::kGenerous;
constexpr const char* kToken = "secret";

std::string readLine(int fd) {
  std::string line;
  char c = 0;
  while (::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

void writeLine(int fd, const std::string& line) {
  const std::string bytes = line + "\n";
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

// The agent side: a standby store, and whatever its commands leave behind
// (a store it serves, a client holding a will), until its pipe closes.
class AgentBody {
 public:
  AgentBody() : standby_("127.0.0.1") {}
  int port() const { return standby_.port(); }

  // "serve" | "walk SELF LOSTPORT PORT..." | "will STOREPORT clear|close|keep"
  std::string run(const std::string& command) {
    std::istringstream in(command);
    std::string verb;
    in >> verb;
    if (verb == "serve") servers_.push_back(standby_.serve(kToken));
    if (verb == "walk") return walk(in);
    if (verb == "will") leaveWill(in);
    return "ok";
  }

 private:
  std::string walk(std::istringstream& in) {
    size_t self = 0;
    int lostPort = 0, port = 0;
    in >> self >> lostPort;
    std::vector<StoreCandidate> candidates;
    while (in >> port) candidates.push_back({"127.0.0.1", port});
    StoreLocation found =
        findOrBecomeStore(candidates, self, standby_, kToken, {"127.0.0.1", lostPort});
    const bool serves = found.server != nullptr;
    if (serves) servers_.push_back(std::move(found.server));
    return std::to_string(found.address.port) + (serves ? " serves" : " client");
  }

  void leaveWill(std::istringstream& in) {
    int port = 0;
    std::string mode;
    in >> port >> mode;
    client_ = std::make_unique<StoreClient>("127.0.0.1", port, kToken, kGenerous);
    client_->setWill("r0/events", "r0/event/", "lost\nnode " + std::to_string(::getpid()));
    if (mode == "clear") client_->clearWill();
    if (mode == "close") client_->close();
  }

  StandbyStore standby_;
  std::vector<std::unique_ptr<StoreServer>> servers_;
  std::unique_ptr<StoreClient> client_;
};

// A forked agent. Killed (SIGKILL) and reaped at the latest when destroyed.
class AgentProcess {
 public:
  AgentProcess() {
    int down[2], up[2];
    EXPECT_EQ(::pipe2(down, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(up, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(down[1]);
      ::close(up[0]);
      serveCommands(down[0], up[1]);
    }
    ::close(down[0]);
    ::close(up[1]);
    commands_.reset(down[1]);
    replies_.reset(up[0]);
    port_ = std::stoi(readLine(replies_.get()));
  }
  ~AgentProcess() { kill(); }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  void send(const std::string& command) { writeLine(commands_.get(), command); }
  std::string reply() { return readLine(replies_.get()); }
  std::string ask(const std::string& command) {
    send(command);
    return reply();
  }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  // The child: answers commands until its pipe closes; never returns.
  [[noreturn]] static void serveCommands(int in, int out) {
    try {
      AgentBody body;
      writeLine(out, std::to_string(body.port()));
      for (std::string line = readLine(in); !line.empty(); line = readLine(in)) {
        writeLine(out, body.run(line));
      }
    } catch (const std::exception& e) {
      writeLine(out, std::string("error: ") + e.what());
    }
    ::_exit(0);
  }

  pid_t pid_ = -1;
  int port_ = 0;
  UniqueFd commands_;
  UniqueFd replies_;
};

std::vector<std::unique_ptr<AgentProcess>> startAgents(size_t n) {
  std::vector<std::unique_ptr<AgentProcess>> agents;
  for (size_t i = 0; i < n; ++i) agents.push_back(std::make_unique<AgentProcess>());
  return agents;
}

std::string walkCommand(const std::vector<std::unique_ptr<AgentProcess>>& agents, size_t self,
                        int lostPort) {
  std::string command = "walk " + std::to_string(self) + " " + std::to_string(lostPort);
  for (const auto& a : agents) command += " " + std::to_string(a->port());
  return command;
}

// Tells each of `who` to walk at once, then collects their answers.
std::vector<std::string> walkAll(const std::vector<std::unique_ptr<AgentProcess>>& agents,
                                 const std::vector<size_t>& who, int lostPort) {
  std::vector<std::string> answers;
  for (size_t i : who) agents[i]->send(walkCommand(agents, i, lostPort));
  for (size_t i : who) answers.push_back(agents[i]->reply());
  return answers;
}

void expectSetAndGet(int port) {
  StoreClient client("127.0.0.1", port, kToken, kGenerous);
  client.set("after", "succession");
  EXPECT_EQ(client.get("after", kGenerous), "succession");
}

TEST(StoreProcessTest, AKilledStoreIsSucceededByTheNextCandidateAndThatOneByTheNext) {
  auto agents = startAgents(4);
  ASSERT_EQ(agents[0]->ask("serve"), "ok");
  StoreClient("127.0.0.1", agents[0]->port(), kToken, kGenerous).set("before", "x");
  agents[0]->kill();
  const std::string one = std::to_string(agents[1]->port());
  EXPECT_EQ(walkAll(agents, {1, 2, 3}, agents[0]->port()),
            (std::vector<std::string>{one + " serves", one + " client", one + " client"}));
  expectSetAndGet(agents[1]->port());
  agents[1]->kill();
  const std::string two = std::to_string(agents[2]->port());
  EXPECT_EQ(walkAll(agents, {2, 3}, agents[1]->port()),
            (std::vector<std::string>{two + " serves", two + " client"}));
  expectSetAndGet(agents[2]->port());
}

TEST(StoreProcessTest, WithTheNextCandidateKilledTooTheOneAfterItServes) {
  auto agents = startAgents(4);
  ASSERT_EQ(agents[0]->ask("serve"), "ok");
  agents[0]->kill();
  agents[1]->kill();
  const std::string two = std::to_string(agents[2]->port());
  EXPECT_EQ(walkAll(agents, {3, 2}, agents[0]->port()),
            (std::vector<std::string>{two + " client", two + " serves"}));
  expectSetAndGet(agents[2]->port());
}

std::string deathOf(const AgentProcess& agent) {
  return "lost\nnode " + std::to_string(agent.pid());
}

TEST(StoreProcessTest, AKilledClientsWillAppearsInTheEventSequence) {
  AgentProcess agent;
  StoreServer server("127.0.0.1", 0, kToken);
  StoreClient watcher("127.0.0.1", server.port(), kToken, kGenerous);
  ASSERT_EQ(agent.ask("will " + std::to_string(server.port()) + " keep"), "ok");
  const std::string death = deathOf(agent);
  agent.kill();
  EXPECT_EQ(watcher.get("r0/event/0", kGenerous), death);
  EXPECT_EQ(watcher.tryGet("r0/events"), "1");
}

TEST(StoreProcessTest, AKilledClientWhoseWillWasClearedOrClosedAppendsNothing) {
  AgentProcess cleared, closed, sentinel;
  StoreServer server("127.0.0.1", 0, kToken);
  StoreClient watcher("127.0.0.1", server.port(), kToken, kGenerous);
  const std::string port = std::to_string(server.port());
  ASSERT_EQ(cleared.ask("will " + port + " clear"), "ok");
  ASSERT_EQ(closed.ask("will " + port + " close"), "ok");
  ASSERT_EQ(sentinel.ask("will " + port + " keep"), "ok");
  const std::string death = deathOf(sentinel);
  cleared.kill();
  closed.kill();
  sentinel.kill();  // the store sees it go after the others
  EXPECT_EQ(watcher.get("r0/event/0", kGenerous), death);
  EXPECT_EQ(watcher.tryGet("r0/events"), "1");
}

}  // namespace
}  // namespace distrun::rdzv
