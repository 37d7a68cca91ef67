// The Communicator contract for the Gloo backend, ranks as threads. The same
// suite runs with ranks as processes (distrun/testing/comm_process_test.cc)
// and for the MPI backend under mpirun (distrun/testing/mpi_test.cc).
#include <gtest/gtest.h>

#include "distrun/comm/testing/contract.h"

namespace distrun::comm {
namespace {

class GlooContractTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooContractTest, EveryCollectiveTypeOpAndCount) {
  std::vector<std::vector<std::string>> failures(static_cast<size_t>(GetParam()));
  auto errors = testing::runGlooThreads(GetParam(), [&](Communicator& comm) {
    failures[static_cast<size_t>(comm.rank())] = testing::checkContract(comm);
  });
  for (int r = 0; r < GetParam(); ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    for (const std::string& f : failures[static_cast<size_t>(r)]) ADD_FAILURE() << f;
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooContractTest, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& world) { return "world" + std::to_string(world.param); });

}  // namespace
}  // namespace distrun::comm
