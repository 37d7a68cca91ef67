// distrun's collectives from a plain Makefile or command line, through
// pkg-config (no CMake): every rank adds its rank number into one sum.
//   g++ -std=c++20 allreduce.cc $(pkg-config --cflags --libs --static distrun-comm)
//   distrun run --nproc-per-node 2 ./a.out
#include <iostream>
#include <memory>
#include <vector>

#include "distrun/comm/connect.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"

int main() try {
  distrun::ProcessEnvironment env;
  std::unique_ptr<distrun::comm::Communicator> comm = distrun::comm::connect(env);
  std::vector<double> sum = {static_cast<double>(comm->rank())};
  comm->allreduce(sum.data(), sum.size(), distrun::comm::ReduceOp::kSum);
  std::cout << "allreduce: rank " << comm->rank() << " of " << comm->size() << " sums " << sum[0]
            << "\n";
  return 0;
} catch (const distrun::Error& e) {
  std::cerr << "allreduce: error: " << e.what() << "\n";
  return distrun::toInt(e.exitCode());
}
