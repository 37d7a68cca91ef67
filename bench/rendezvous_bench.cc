// N simulated agents (threads, each with its own connection) join one
// rendezvous store hosted by a separate process, as node 0's agent would.
// Prints one JSON line: agents, seconds from the first connect to the last
// agent knowing its ranks, and the store process's peak resident memory.
//
//   rendezvous_bench AGENTS
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "distrun/common/system.h"
#include "distrun/rdzv/rendezvous.h"
#include "distrun/rdzv/store_server.h"

namespace {

using namespace distrun::rdzv;

long peakRssKb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// The store's process: serves until its stdin pipe closes.
[[noreturn]] void serveStore(int portPipe, int stopPipe) {
  StoreServer server("127.0.0.1", 0, "bench");
  int port = server.port();
  [[maybe_unused]] ssize_t n = ::write(portPipe, &port, sizeof(port));
  char c;
  n = ::read(stopPipe, &c, 1);
  server.stop();
  ::_exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  int agents = argc > 1 ? std::stoi(argv[1]) : 1024;
  distrun::raiseOpenFileLimit();
  int portPipe[2], stopPipe[2];
  if (::pipe(portPipe) != 0 || ::pipe(stopPipe) != 0) return 1;
  pid_t store = ::fork();
  if (store == 0) serveStore(portPipe[1], stopPipe[0]);
  int port = 0;
  if (::read(portPipe[0], &port, sizeof(port)) != sizeof(port)) return 1;

  std::atomic<int> failures{0};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(agents));
  for (int node = 0; node < agents; ++node) {
    threads.emplace_back([&, node] {
      try {
        StoreClient client("127.0.0.1", port, "bench", std::chrono::seconds(60));
        RendezvousConfig config{node,
                                agents,
                                8,
                                "node" + std::to_string(node),
                                std::chrono::seconds(120),
                                [] { return 29500; }};
        World world = joinRound(client, 0, config);
        if (world.firstRank != node * 8 || world.worldSize != agents * 8) failures++;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "agent %d: %s\n", node, e.what());
        failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  long rss = peakRssKb(store);
  [[maybe_unused]] ssize_t n = ::write(stopPipe[1], "x", 1);
  ::waitpid(store, nullptr, 0);
  std::printf("{\"agents\": %d, \"seconds\": %.4f, \"store_peak_rss_kb\": %ld, \"failures\": %d}\n",
              agents, seconds, rss, failures.load());
  return failures.load() == 0 ? 0 : 1;
}
