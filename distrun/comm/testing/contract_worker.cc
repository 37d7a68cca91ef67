// One rank of the Communicator contract as a process:
//   comm_contract_worker BACKEND            runs checkContract, exit 0 on pass
//   comm_contract_worker BACKEND lose RANK  RANK dies (SIGKILL) after joining;
//                                           the others report what they saw
#include <signal.h>

#include <iostream>
#include <string>
#include <vector>

#include "distrun/comm/connect.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"

namespace {

int loseRank(distrun::comm::Communicator& comm, int victim) {
  if (comm.rank() == victim) ::raise(SIGKILL);
  std::vector<float> data(1 << 16, 1.0f);
  for (int i = 0; i < 1000; ++i)
    comm.allreduce(data.data(), data.size(), distrun::comm::ReduceOp::kSum);
  std::cerr << "rank " << comm.rank() << ": rank " << victim << " died but nothing failed\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    distrun::ProcessEnvironment env;
    auto comm = distrun::comm::connect(
        env, distrun::comm::ConnectOptions{.backend = args.at(0), .timeout = {}, .name = "world"});
    if (args.size() == 3 && args[1] == "lose") return loseRank(*comm, std::stoi(args[2]));
    std::vector<std::string> failures = distrun::comm::testing::checkContract(*comm);
    for (const std::string& f : failures) std::cerr << f << "\n";
    std::cout << "contract " << (failures.empty() ? "ok" : "FAILED") << " rank " << comm->rank()
              << " of " << comm->size() << " (" << comm->backend() << ", " << comm->transport()
              << ")\n";
    return failures.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "comm_contract_worker: error: " << e.what() << "\n";
    return distrun::toInt(distrun::exitCodeFor(e));
  }
}
