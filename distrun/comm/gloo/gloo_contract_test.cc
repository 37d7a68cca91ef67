// The Communicator contract for the Gloo backend, ranks as threads. The same
// suite runs with ranks as processes (distrun/testing/comm_process_test.cc)
// and for the MPI backend under mpirun (distrun/testing/mpi_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "distrun/comm/testing/contract.h"

namespace distrun::comm {
namespace {

// The contract's counts are small (at most 1031 elements), so the size
// thresholds pick the allreduce algorithm: each one is checked whole. The
// shared-memory collectives (all ranks here share a host) get slots of 256
// bytes, so that most counts go in several pieces through both slot sets
// (and messages through both halves of their channels); with direct reads,
// every allgather, alltoall, allreduce, broadcast and message reads the
// peers' buffers (testing::readingPeersDirectly).
enum class Allreduce { kSharedMemory, kSharedMemoryDirect, kGather, kBcube, kRing };

GlooOptions forcing(Allreduce algorithm) {
  GlooOptions options;
  options.sharedMemory =
      algorithm == Allreduce::kSharedMemory || algorithm == Allreduce::kSharedMemoryDirect;
  options.sharedSlotBytes = 256;
  options.sharedDirectFromBytes = size_t{1} << 40;
  if (algorithm == Allreduce::kSharedMemoryDirect) options = testing::readingPeersDirectly(options);
  if (algorithm != Allreduce::kGather) options.gatherBelowBytes = 0;
  if (algorithm == Allreduce::kRing) options.bcubeBelowBytes = 0;
  // Across nodes: allgather and alltoall hierarchical, or with the ring
  // Gloo's among all ranks (as above the size where the hierarchy stops
  // paying).
  if (algorithm == Allreduce::kRing) {
    options.hierarchicalAllgatherBelowBytes = 0;
    options.hierarchicalAlltoallBelowBytes = 0;
  }
  return options;
}

std::string nameOf(Allreduce algorithm) {
  switch (algorithm) {
    case Allreduce::kSharedMemory:
      return "shared_memory";
    case Allreduce::kSharedMemoryDirect:
      return "shared_memory_direct";
    case Allreduce::kGather:
      return "gather";
    case Allreduce::kBcube:
      return "bcube";
    case Allreduce::kRing:
      return "ring";
  }
  return "?";
}

// Every data type, but one of each size and kind under ThreadSanitizer (the
// TSan tree, cmake/DistrunSanitizers.cmake): float, bfloat16 (2 bytes,
// reduced through float as float16 is) and int64 (8 bytes, integer). What
// TSan looks for, a rank's thread touching memory that another rank's
// thread or the asynchronous worker has not handed over, is in the code that
// moves and hands over the bytes, the same for every type; the types differ
// in their reduction kernels, pure functions over memory already handed
// over. With all six this binary took 158 s and 279 CPU-s under TSan, 130 s
// of it in the contract; with these three 91 s and 155 CPU-s (29 November
// 2026). The normal and ASan trees check all six.
testing::ContractOptions contractOptions() {
  testing::ContractOptions options;
#if defined(__SANITIZE_THREAD__)
  options.types = {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64};
#endif
  return options;
}

class GlooContractTest : public ::testing::TestWithParam<std::tuple<int, Allreduce>> {};

TEST_P(GlooContractTest, EveryCollectiveTypeOpAndCount) {
  const auto [world, algorithm] = GetParam();
  const GlooOptions options = forcing(algorithm);
  std::vector<std::vector<std::string>> failures(static_cast<size_t>(world));
  std::vector<std::string> transports(static_cast<size_t>(world));
  auto errors = testing::runGlooThreads(
      world,
      [&](Communicator& comm) {
        transports[static_cast<size_t>(comm.rank())] = comm.transport();
        failures[static_cast<size_t>(comm.rank())] =
            testing::checkContract(comm, contractOptions());
      },
      options);
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    const std::string& transport = transports[static_cast<size_t>(r)];
    if (algorithm == Allreduce::kSharedMemoryDirect && world > 1) {
      EXPECT_THAT(transport, ::testing::HasSubstr("directly"));
    }
    if (options.sharedMemory && world > 1) {  // send and recv too
      EXPECT_THAT(transport, ::testing::StartsWith("shared memory"));
      EXPECT_THAT(transport, ::testing::Not(::testing::HasSubstr("over tcp")));
    }
    for (const std::string& f : failures[static_cast<size_t>(r)]) ADD_FAILURE() << f;
  }
}

INSTANTIATE_TEST_SUITE_P(
    WorldSizes, GlooContractTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4),
                       ::testing::Values(Allreduce::kSharedMemory, Allreduce::kSharedMemoryDirect,
                                         Allreduce::kGather, Allreduce::kBcube, Allreduce::kRing)),
    [](const ::testing::TestParamInfo<std::tuple<int, Allreduce>>& p) {
      return "world" + std::to_string(std::get<0>(p.param)) + "_" + nameOf(std::get<1>(p.param));
    });

// The hierarchical path (ranks on several nodes, some sharing one): one
// process plays the nodes, each rank's node named by a letter of the
// layout ("aabb": ranks 0 and 1 on node a, 2 and 3 on node b). The leaders
// reduce by gather (the contract's small counts), and each node's ranks
// read every block and message from each other directly; or, with the
// thresholds at 0, the leaders reduce by ring and the node's ranks copy
// through the slots.
class HierarchicalContractTest
    : public ::testing::TestWithParam<std::tuple<std::string, Allreduce>> {};

TEST_P(HierarchicalContractTest, EveryCollectiveTypeOpAndCount) {
  const auto [layout, leaders] = GetParam();
  const int world = static_cast<int>(layout.size());
  std::vector<std::vector<std::string>> failures(static_cast<size_t>(world));
  std::vector<std::string> transports(static_cast<size_t>(world));
  GlooOptions options = forcing(leaders);
  options.sharedMemory = true;
  if (leaders == Allreduce::kGather) options = testing::readingPeersDirectly(options);
  auto errors = testing::runGlooThreads(
      world,
      [&](Communicator& comm) {
        transports[static_cast<size_t>(comm.rank())] = comm.transport();
        failures[static_cast<size_t>(comm.rank())] =
            testing::checkContract(comm, contractOptions());
      },
      options, [&](int r) { return std::string(1, layout[static_cast<size_t>(r)]); });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    EXPECT_THAT(transports[static_cast<size_t>(r)], ::testing::HasSubstr("tcp between them"));
    if (leaders == Allreduce::kGather) {
      EXPECT_THAT(transports[static_cast<size_t>(r)],
                  ::testing::HasSubstr("read from the peers directly"));
    }
    for (const std::string& f : failures[static_cast<size_t>(r)]) ADD_FAILURE() << f;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierarchicalContractTest,
                         ::testing::Combine(::testing::Values("aab", "aabb", "abab", "abbb"),
                                            ::testing::Values(Allreduce::kGather,
                                                              Allreduce::kRing)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, Allreduce>>& p) {
                           return std::get<0>(p.param) + "_leaders_" + nameOf(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace distrun::comm
