// N simulated agents (threads, each with its own connection) join one
// rendezvous store hosted by a separate process, as a node's agent would.
// Prints one JSON line (docs/launcher.md, "Speed"):
//   fixed:   joinRound, every agent with its --node-rank.
//   elastic: joinElasticRound with --nnodes N-1:N, then a re-formation: one
//            agent leaves and the other N-1, still connected, join round 1
//            (closed by lastCall, which the figure includes and names).
// Every agent checks its ranks; a wrong one counts as a failure.
//
//   rendezvous_bench AGENTS [fixed|elastic] [LAST_CALL_MS]
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "distrun/common/system.h"
#include "distrun/rdzv/elastic_rendezvous.h"
#include "distrun/rdzv/rendezvous.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"

namespace {

using namespace distrun::rdzv;
using Seconds = std::chrono::duration<double>;
constexpr int kNproc = 8;

long peakRssKb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// CPU time the process has used so far, all its threads (schedstat: ns).
double cpuSeconds(pid_t pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  double total = 0;
  DIR* dir = ::opendir(tasks.c_str());
  if (!dir) return -1;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream stat(tasks + "/" + e->d_name + "/schedstat");
    double ns = 0;
    if (stat >> ns) total += ns / 1e9;
  }
  ::closedir(dir);
  return total;
}

// The store's process: serves until its stop pipe is written to.
[[noreturn]] void serveStore(int portPipe, int stopPipe) {
  StoreServer server("127.0.0.1", 0, "bench");
  int port = server.port();
  [[maybe_unused]] ssize_t n = ::write(portPipe, &port, sizeof(port));
  char c;
  n = ::read(stopPipe, &c, 1);
  server.stop();
  ::_exit(0);
}

struct Figures {
  double seconds = 0, storeCpu = 0;              // the (first) round
  double reformSeconds = 0, reformStoreCpu = 0;  // elastic: round 1
};

StoreClient connect(int port) {
  return StoreClient("127.0.0.1", port, "bench", std::chrono::seconds(60));
}

Figures runFixed(int agents, int port, pid_t store, std::atomic<int>& failures) {
  const double cpu0 = cpuSeconds(store);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(agents));
  for (int node = 0; node < agents; ++node) {
    threads.emplace_back([&, node] {
      try {
        StoreClient client = connect(port);
        RendezvousConfig config{
            node, agents, kNproc, "node" + std::to_string(node), std::chrono::seconds(120), [] {
              return 29500;
            }};
        World world = joinRound(client, 0, config);
        if (world.firstRank != node * kNproc || world.worldSize != agents * kNproc) failures++;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "agent %d: %s\n", node, e.what());
        failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  return {Seconds(std::chrono::steady_clock::now() - start).count(), cpuSeconds(store) - cpu0};
}

ElasticJoin elasticJoin(int agents, int node, std::chrono::milliseconds lastCall) {
  ElasticJoin j;
  j.minNodes = agents - 1;
  j.maxNodes = agents;
  j.nproc = kNproc;
  j.host = "node" + std::to_string(node);
  j.standbyPort = 30000 + node % 1000;
  j.nodeName = j.host;
  j.joinTimeout = std::chrono::seconds(120);
  j.lastCall = lastCall;
  j.pickMasterPort = [] { return 29500; };
  return j;
}

// Whether `o` is a consistent membership of a round of `nodes`.
bool consistent(const ElasticOutcome& o, int nodes) {
  return o.status == ElasticStatus::kJoined && o.numNodes == nodes &&
         o.worldSize == nodes * kNproc && o.firstRank == o.nodeRank * kNproc &&
         o.masterPort == 29500 && o.successors.size() == static_cast<size_t>(kMaxSuccessors);
}

// The latches an elastic agent counts down, one per round it belongs to,
// whatever happens, so that the run always ends.
struct Rounds {
  std::latch round0, round1;          // every agent knows its round 0, its round 1 outcome
  std::shared_future<void> go, done;  // start round 1; the figures are taken
};

// One agent of the elastic run: round 0, then (all but the last, which
// leaves) round 1 once `go` is given. It keeps its connection until `done`,
// as an agent does.
void elasticAgent(int agents, int node, int port, std::chrono::milliseconds lastCall,
                  Rounds& rounds, std::atomic<int>& failures) {
  const bool leaves = node == agents - 1;
  const int belongs = leaves ? 1 : 2;  // rounds it is a member of
  int settled = 0;
  auto settle = [&] { (settled++ == 0 ? rounds.round0 : rounds.round1).count_down(); };
  try {
    StoreClient client = connect(port);
    const ElasticJoin j = elasticJoin(agents, node, lastCall);
    if (!consistent(joinElasticRound(client, 0, j), agents)) failures++;
    settle();
    if (!leaves) {
      rounds.go.wait();
      if (!consistent(joinElasticRound(client, 1, j), agents - 1)) failures++;
      settle();
      rounds.done.wait();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "agent %d: %s\n", node, e.what());
    failures++;
  }
  while (settled < belongs) settle();
}

Figures runElastic(int agents, int port, pid_t store, std::chrono::milliseconds lastCall,
                   std::atomic<int>& failures) {
  std::promise<void> go, done;
  Rounds rounds{std::latch(agents), std::latch(agents - 1), go.get_future().share(),
                done.get_future().share()};
  Figures f;
  double cpu = cpuSeconds(store);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(agents));
  for (int node = 0; node < agents; ++node) {
    threads.emplace_back(elasticAgent, agents, node, port, lastCall, std::ref(rounds),
                         std::ref(failures));
  }
  rounds.round0.wait();
  f.seconds = Seconds(std::chrono::steady_clock::now() - start).count();
  f.storeCpu = cpuSeconds(store) - cpu;
  cpu = cpuSeconds(store);
  start = std::chrono::steady_clock::now();
  go.set_value();
  rounds.round1.wait();
  f.reformSeconds = Seconds(std::chrono::steady_clock::now() - start).count();
  f.reformStoreCpu = cpuSeconds(store) - cpu;
  done.set_value();
  for (auto& t : threads) t.join();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const int agents = argc > 1 ? std::stoi(argv[1]) : 1024;
  const std::string mode = argc > 2 ? argv[2] : "fixed";
  const std::chrono::milliseconds lastCall(argc > 3 ? std::stoi(argv[3]) : 1000);
  if (agents < 2 || (mode != "fixed" && mode != "elastic")) {
    std::fprintf(stderr, "usage: rendezvous_bench AGENTS(>=2) [fixed|elastic] [LAST_CALL_MS]\n");
    return 64;
  }
  distrun::raiseOpenFileLimit();
  int portPipe[2], stopPipe[2];
  if (::pipe(portPipe) != 0 || ::pipe(stopPipe) != 0) return 1;
  pid_t store = ::fork();
  if (store == 0) serveStore(portPipe[1], stopPipe[0]);
  int port = 0;
  if (::read(portPipe[0], &port, sizeof(port)) != sizeof(port)) return 1;

  std::atomic<int> failures{0};
  Figures f = mode == "fixed" ? runFixed(agents, port, store, failures)
                              : runElastic(agents, port, store, lastCall, failures);
  long rss = peakRssKb(store);
  [[maybe_unused]] ssize_t n = ::write(stopPipe[1], "x", 1);
  ::waitpid(store, nullptr, 0);
  std::printf(
      "{\"mode\": \"%s\", \"agents\": %d, \"seconds\": %.4f, \"store_cpu_seconds\": %.4f, "
      "\"reform_seconds\": %.4f, \"reform_store_cpu_seconds\": %.4f, \"last_call_seconds\": "
      "%.3f, \"store_peak_rss_kb\": %ld, \"failures\": %d}\n",
      mode.c_str(), agents, f.seconds, f.storeCpu, f.reformSeconds, f.reformStoreCpu,
      mode == "elastic" ? static_cast<double>(lastCall.count()) / 1000 : 0.0, rss, failures.load());
  return failures.load() == 0 ? 0 : 1;
}
