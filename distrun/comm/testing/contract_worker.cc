// One rank of the Communicator contract as a process:
//   comm_contract_worker BACKEND            runs checkContract, exit 0 on pass
//   comm_contract_worker BACKEND lose RANK  RANK dies (SIGKILL) after joining;
//                                           the others report what they saw
//   comm_contract_worker hierarchical LAYOUT  checkContract on a hierarchical
//                                           communicator, MPI between the
//                                           nodes and Gloo's shared memory
//                                           within each (LAYOUT: a letter
//                                           per rank naming its node, under
//                                           mpirun)
#include <signal.h>

#include <iostream>
#include <string>
#include <vector>

#include "distrun/comm/connect.h"
#include "distrun/comm/hierarchical/hierarchical_communicator.h"
#include "distrun/comm/mpi/mpi_communicator.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/rdzv/store_server.h"

namespace {

int loseRank(distrun::comm::Communicator& comm, int victim) {
  if (comm.rank() == victim) ::raise(SIGKILL);
  std::vector<float> data(1 << 16, 1.0f);
  for (int i = 0; i < 1000; ++i)
    comm.allreduce(data.data(), data.size(), distrun::comm::ReduceOp::kSum);
  std::cerr << "rank " << comm.rank() << ": rank " << victim << " died but nothing failed\n";
  return 1;
}

int checkOn(distrun::comm::Communicator& comm) {
  std::vector<std::string> failures = distrun::comm::testing::checkContract(comm);
  for (const std::string& f : failures) std::cerr << f << "\n";
  std::cout << "contract " << (failures.empty() ? "ok" : "FAILED") << " rank " << comm.rank()
            << " of " << comm.size() << " (" << comm.backend() << ", " << comm.transport() << ")\n";
  return failures.empty() ? 0 : 1;
}

// The world and the leaders' part are MPI's; each node's ranks meet in
// Gloo's shared memory through a store that rank 0 hosts.
int hierarchicalOverMpi(const distrun::Environment& env, const std::string& layout) {
  using namespace distrun::comm;
  std::unique_ptr<Communicator> world =
      connect(env, ConnectOptions{.backend = "mpi", .timeout = {}, .name = "world"});
  if (layout.size() != static_cast<size_t>(world->size())) {
    throw distrun::UsageError("LAYOUT '" + layout + "' has not a letter for each of the " +
                              std::to_string(world->size()) + " ranks");
  }
  const int rank = world->rank();
  const NodeLayout nodes = testing::letterLayout(layout, rank);
  std::unique_ptr<distrun::rdzv::StoreServer> server;
  int32_t port = 0;
  if (rank == 0) {
    server = std::make_unique<distrun::rdzv::StoreServer>("127.0.0.1", 0, "contract");
    port = server->port();
  }
  world->broadcast(&port, &port, 1, DataType::kInt32, 0);
  HierarchicalParts parts;
  parts.leaders = splitMpi(*world, nodes.isLeader() ? 0 : -1);
  parts.node = testing::glooNodePart(layout, rank, port, "mpi-hierarchical");
  parts.world = std::move(world);
  HierarchicalCommunicator comm(nodes, std::move(parts));
  const int result = checkOn(comm);
  comm.barrier();  // rank 0's store stays up while any rank may need it
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    distrun::ProcessEnvironment env;
    if (args.size() == 2 && args[0] == "hierarchical") return hierarchicalOverMpi(env, args[1]);
    auto comm = distrun::comm::connect(
        env, distrun::comm::ConnectOptions{.backend = args.at(0), .timeout = {}, .name = "world"});
    if (args.size() == 3 && args[1] == "lose") return loseRank(*comm, std::stoi(args[2]));
    return checkOn(*comm);
  } catch (const std::exception& e) {
    std::cerr << "comm_contract_worker: error: " << e.what() << "\n";
    return distrun::toInt(distrun::exitCodeFor(e));
  }
}
