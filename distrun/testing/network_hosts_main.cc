// distrun-network-hosts: the hosts of network_hosts.h for a script (the
// bench's HOSTS mode, bench/hierarchical.sh), made before COMMAND starts
// and removed when it ends, however it ends.
//   distrun-network-hosts HOSTS MBIT COMMAND [ARG...]
// HOSTS hosts (1 to 9), each fast link (hsn0) capped at MBIT Mbit/s (0:
// not capped). COMMAND runs on this machine with NETWORK_HOSTS=HOSTS and,
// for each host N, NETWORK_HOST_N: the shell words that run a program on
// it (`eval "$NETWORK_HOST_1 hostname"` prints nid001). SIGINT and SIGTERM
// are passed on to COMMAND. Exit: COMMAND's (128+N for a signal), 64 for a
// usage mistake, 69 when hosts cannot be made here.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "distrun/common/process.h"
#include "distrun/testing/network_hosts.h"

namespace {

using distrun::testing::NetworkHosts;

pid_t child = 0;

void passOn(int signal) {
  if (child > 0) ::kill(child, signal);
}

int wholeNumber(const char* text, const char* what) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0) {
    throw std::invalid_argument(std::string(what) + " '" + text + "': expected a whole number");
  }
  return static_cast<int>(value);
}

int runWithHosts(const NetworkHosts& hosts, char** argv) {
  ::setenv("NETWORK_HOSTS", std::to_string(hosts.count()).c_str(), 1);
  for (int host = 1; host <= hosts.count(); ++host) {
    ::setenv(("NETWORK_HOST_" + std::to_string(host)).c_str(), hosts.runsOn(host).c_str(), 1);
  }
  std::vector<std::string> command;
  for (char** word = argv; *word != nullptr; ++word) command.emplace_back(*word);
  child = distrun::startProcess({.argv = command, .explainExecFailure = true});
  return distrun::waitForProcess(child);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: distrun-network-hosts HOSTS MBIT COMMAND [ARG...]\n";
    return 64;
  }
  int count = 0;
  int mbit = 0;
  try {
    count = wholeNumber(argv[1], "HOSTS");
    mbit = wholeNumber(argv[2], "MBIT");
  } catch (const std::invalid_argument& e) {
    std::cerr << "distrun-network-hosts: " << e.what() << "\n";
    return 64;
  }
  if (std::string why = NetworkHosts::unavailable(); !why.empty()) {
    std::cerr << "distrun-network-hosts: " << why << "\n";
    return 69;
  }
  struct sigaction forward = {};
  forward.sa_handler = passOn;
  ::sigaction(SIGINT, &forward, nullptr);
  ::sigaction(SIGTERM, &forward, nullptr);
  try {
    NetworkHosts hosts(count);
    for (int host = 1; mbit > 0 && host <= count; ++host) hosts.capFastLink(host, mbit);
    return runWithHosts(hosts, argv + 3);
  } catch (const std::runtime_error& e) {
    std::cerr << "distrun-network-hosts: " << e.what() << "\n";
    return 69;
  }
}
