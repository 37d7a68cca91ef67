// HierarchicalCommunicator over Gloo parts, ranks as threads: the
// Communicator contract on every layout, the world's own allgather and
// alltoall past the thresholds, the parts checked, and a part's error
// naming world ranks. The same contract with MPI between the nodes runs
// under mpirun (distrun/testing/mpi_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "distrun/comm/hierarchical/hierarchical_communicator.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/error.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::comm {
namespace {

using ::testing::HasSubstr;

// Layouts by node letter: "aab" is ranks 0 and 1 on node a, rank 2 alone
// on node b. With the thresholds at 0, allgather and alltoall take the
// world's own.
class HierarchicalCommunicatorContractTest
    : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(HierarchicalCommunicatorContractTest, EveryCollectiveTypeOpAndCount) {
  const auto [layout, worldsOwn] = GetParam();
  HierarchicalOptions options;
  if (worldsOwn) options.allgatherBelowBytes = options.alltoallBelowBytes = 0;
  std::vector<std::vector<std::string>> failures(layout.size());
  std::vector<std::string> transports(layout.size());
  testing::ContractOptions contract;
#if defined(__SANITIZE_THREAD__)
  contract.types = {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64};
#endif
  auto errors = testing::runHierarchicalThreads(
      layout,
      [&](Communicator& comm) {
        transports[static_cast<size_t>(comm.rank())] = comm.transport();
        failures[static_cast<size_t>(comm.rank())] = testing::checkContract(comm, contract);
      },
      options);
  for (size_t r = 0; r < layout.size(); ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_THAT(transports[r], HasSubstr("between them")) << "rank " << r;
    for (const std::string& f : failures[r]) ADD_FAILURE() << f;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierarchicalCommunicatorContractTest,
                         ::testing::Combine(::testing::Values("ab", "aab", "aabb", "abab", "abbb"),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& p) {
                           return std::get<0>(p.param) +
                                  (std::get<1>(p.param) ? "_worlds_own" : "_hierarchy");
                         });

TEST(HierarchicalCommunicatorTest, TransportNamesThePartsAndTheNodes) {
  std::vector<std::string> transports(3);
  auto errors = testing::runHierarchicalThreads("aab", [&](Communicator& comm) {
    transports[static_cast<size_t>(comm.rank())] = comm.transport();
    EXPECT_EQ(comm.backend(), "hierarchical");
  });
  EXPECT_EQ(errors, std::vector<std::string>(3));
  // "shared memory, large blocks ... read from the peers directly" where
  // the ranks may read each other's memory.
  for (int r : {0, 1}) {
    EXPECT_THAT(transports[static_cast<size_t>(r)], ::testing::StartsWith("gloo (shared memory"));
    EXPECT_THAT(transports[static_cast<size_t>(r)],
                ::testing::EndsWith(") within each of 2 nodes, gloo (tcp) between them"));
  }
  EXPECT_EQ(transports[2], "one rank within each of 2 nodes, gloo (tcp) between them");
}

// Parts that do not fit the layout are refused before anything is sent.
TEST(HierarchicalCommunicatorTest, PartsThatDoNotFitTheLayoutAreRefused) {
  rdzv::StoreServer server("127.0.0.1", 0, "contract");
  // Rank 0 of "ab" alone on node a: given "aab"'s parts it has a node part.
  HierarchicalParts parts = testing::glooHierarchicalParts("a", 0, server.port(), "misfit");
  try {
    HierarchicalCommunicator comm(testing::letterLayout("ab", 0), std::move(parts));
    FAIL() << "a world of 1 was taken for a world of 2";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "hierarchical communicator: the world part must be rank 0 of 2");
  }
}

TEST(HierarchicalCommunicatorTest, APartsErrorNamesWorldRanks) {
  try {
    inPart("among the nodes' leaders", {0, 2, 5},
           [] { throw CommunicationError("allreduce: lost rank 1 (host n2, pid 7)"); });
    FAIL() << "the error was swallowed";
  } catch (const CommunicationError& e) {
    EXPECT_STREQ(e.what(),
                 "among the nodes' leaders, whose ranks 0, 1, 2 are world ranks 0, 2, 5: "
                 "allreduce: lost rank 1 (host n2, pid 7)");
  }
  try {
    inPart("within node 1", {3, 4}, [] { throw TimeoutError("barrier: rank 1 waited 5 s"); });
    FAIL() << "the error was swallowed";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(e.what(), HasSubstr("within node 1, whose ranks 0, 1 are world ranks 3, 4: "));
    EXPECT_EQ(exitCodeFor(e), ExitCode::kTimeout);
  }
}

}  // namespace
}  // namespace distrun::comm
