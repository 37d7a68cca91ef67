// The shared-memory engine on its own, its ranks as threads of one
// process: protocol mismatches between ranks, yielding where ranks
// outnumber their CPUs, and the segment itself. The engine through a
// communicator is distrun/comm/shared_memory_test.cc's.
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/comm/shm/shared_memory_collectives.h"
#include "distrun/comm/shm/shared_memory_options.h"
#include "distrun/comm/shm/shared_segment.h"
#include "distrun/common/error.h"

namespace distrun::comm {
namespace {

using ::testing::HasSubstr;

// Ranks of one segment (slots of 4 KiB) attached from threads, each
// thread running before(r) first.
std::vector<std::unique_ptr<SharedMemoryCollectives>> attachThreads(
    int ranks, const std::function<void(int)>& before) {
  const size_t slot = 4096;
  const std::string name = "/distrun-test-ranks-" + std::to_string(::getpid());
  const size_t bytes = SharedMemoryCollectives::segmentBytes(ranks, slot);
  SharedSegment made = SharedSegment::create(name, bytes);
  SharedMemoryCollectives::format(made, ranks, slot);
  std::vector<std::unique_ptr<SharedMemoryCollectives>> attached(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      before(r);
      attached[static_cast<size_t>(r)] = std::make_unique<SharedMemoryCollectives>(
          SharedSegment::open(name, bytes), r, ranks, slot, std::chrono::seconds(10));
    });
  }
  for (std::thread& t : threads) t.join();
  SharedSegment::unlink(name);
  return attached;
}

// Ranks of one segment as threads, rank r pinned to CPU cpuOf[r] before it
// attaches; each then looks at every rank's CPUs.
std::vector<std::unique_ptr<SharedMemoryCollectives>> attachPinned(const std::vector<int>& cpuOf) {
  auto attached = attachThreads(static_cast<int>(cpuOf.size()), [&](int r) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpuOf[static_cast<size_t>(r)], &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof(one), &one), 0) << std::strerror(errno);
  });
  for (auto& rank : attached) rank->yieldIfOversubscribed();
  return attached;
}

// Each rank's mismatch message when `call` runs on every rank at once (a
// thread each) on 100 floats: the ranks are expected to fail so.
std::vector<std::string> mismatchesOf(
    std::vector<std::unique_ptr<SharedMemoryCollectives>>& ranks,
    const std::function<void(SharedMemoryCollectives&, float*, size_t)>& call) {
  std::vector<std::string> errors(ranks.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < ranks.size(); ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> data(100, 1.0f);
      try {
        call(*ranks[r], data.data(), data.size());
      } catch (const SharedMemoryFailure& f) {
        EXPECT_EQ(f.kind, SharedMemoryFailure::Kind::kMismatch);
        errors[r] = f.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

// A rank that reads its peers directly and one that goes through the slots
// (their direct thresholds differ) would mix two protocols: both fail as a
// mismatch, each naming both calls.
TEST(SharedMemoryTest, RanksThatDisagreeOnReadingDirectlyFail) {
  auto ranks = attachThreads(2, [](int) {});
  ranks[0]->readPeersDirectly(0);
  ranks[0]->reduceDirectlyBetween(0, SIZE_MAX);
  const auto errors = mismatchesOf(ranks, [](SharedMemoryCollectives& rank, float* data, size_t n) {
    rank.run(data, data, n, DataType::kFloat32, ReduceOp::kSum);
  });
  EXPECT_EQ(errors[0],
            "rank 1 called allreduce(sum, 100 x float) where this rank called allreduce(sum, 100 "
            "x float, read directly)");
  EXPECT_EQ(errors[1],
            "rank 0 called allreduce(sum, 100 x float, read directly) where this rank called "
            "allreduce(sum, 100 x float)");
}

// usePaths takes the paths its options ask for: those through the slots
// always, the direct reads only where the peers are readable. A rank given
// them by usePaths and one given them setter by setter agree on the call; a
// rank told its peers are readable and one told not disagree.
TEST(SharedMemoryTest, UsePathsTakesWhatTheOptionsAskFor) {
  SharedMemoryOptions options;
  options.sharedAllreduceSharesFromBytes = 0;
  options.sharedDirectFromBytes = 0;
  options.sharedDirectAllreduceFromBytes = 0;
  options.sharedDirectAllreduceBelowBytes = SIZE_MAX;
  const auto allreduce = [](SharedMemoryCollectives& rank, float* data, size_t n) {
    rank.run(data, data, n, DataType::kFloat32, ReduceOp::kSum);
  };
  auto throughTheSlots = attachThreads(2, [](int) {});
  throughTheSlots[0]->usePaths(options, /*peersReadable=*/false);
  throughTheSlots[1]->reduceBySharesFrom(0);
  EXPECT_THAT(mismatchesOf(throughTheSlots, allreduce), ::testing::Each(""));

  auto directly = attachThreads(2, [](int) {});
  directly[0]->usePaths(options, /*peersReadable=*/true);
  directly[1]->readPeersDirectly(0);
  directly[1]->reduceDirectlyBetween(0, SIZE_MAX);
  EXPECT_THAT(mismatchesOf(directly, allreduce), ::testing::Each(""));

  auto disagreeing = attachThreads(2, [](int) {});
  disagreeing[0]->usePaths(options, /*peersReadable=*/true);
  disagreeing[1]->usePaths(options, /*peersReadable=*/false);
  EXPECT_THAT(mismatchesOf(disagreeing, allreduce)[0],
              HasSubstr("by shares) where this rank called allreduce(sum, 100 x float, read "
                        "directly)"));
}

// A rank whose allreduce goes by shares and one whose every rank reduces
// everything (their thresholds differ) would mix two protocols: both fail.
TEST(SharedMemoryTest, RanksThatDisagreeOnReducingByShareFail) {
  auto ranks = attachThreads(2, [](int) {});
  ranks[0]->reduceBySharesFrom(0);
  const auto errors = mismatchesOf(ranks, [](SharedMemoryCollectives& rank, float* data, size_t n) {
    rank.run(data, data, n, DataType::kFloat32, ReduceOp::kSum);
  });
  EXPECT_EQ(errors[0],
            "rank 1 called allreduce(sum, 100 x float) where this rank called allreduce(sum, 100 "
            "x float, by shares)");
  EXPECT_EQ(errors[1],
            "rank 0 called allreduce(sum, 100 x float, by shares) where this rank called "
            "allreduce(sum, 100 x float)");
}

// An allgather that streams its output and one that reads its peers
// directly (their streaming thresholds differ) would mix two protocols.
TEST(SharedMemoryTest, RanksThatDisagreeOnStreamingAnAllgatherFail) {
  auto ranks = attachThreads(2, [](int) {});
  for (auto& rank : ranks) rank->readPeersDirectly(0);
  ranks[0]->streamOutputsFrom(0);
  const auto errors = mismatchesOf(ranks, [](SharedMemoryCollectives& rank, float* data, size_t) {
    rank.allgather(data, data + 50, 25, DataType::kFloat32);
  });
  EXPECT_EQ(errors[0],
            "rank 1 called allgather(25 x float, read directly) where this rank called "
            "allgather(25 x float)");
  EXPECT_EQ(errors[1],
            "rank 0 called allgather(25 x float) where this rank called allgather(25 x float, "
            "read directly)");
}

// The same for a broadcast: one rank reads the root's input directly, the
// other expects it in the root's slot.
TEST(SharedMemoryTest, RanksThatDisagreeOnReadingABroadcastDirectlyFail) {
  auto ranks = attachThreads(2, [](int) {});
  ranks[1]->broadcastDirectlyBetween(0, SIZE_MAX);
  const auto errors = mismatchesOf(ranks, [](SharedMemoryCollectives& rank, float* data, size_t n) {
    rank.broadcast(data, data, n, DataType::kFloat32, 1);
  });
  EXPECT_EQ(errors[0],
            "rank 1 called broadcast(100 x float, root 1, read directly) where this rank called "
            "broadcast(100 x float, root 1)");
  EXPECT_EQ(errors[1],
            "rank 0 called broadcast(100 x float, root 1) where this rank called broadcast(100 x "
            "float, root 1, read directly)");
}

// The CPUs this process may run on, in order.
std::vector<int> allowedCpus() {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ::sched_getaffinity(0, sizeof(mine), &mine);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  }
  return cpus;
}

// More ranks on a node than CPUs they may run on, all together: each rank
// yields its CPU while it polls; a CPU each: none does.
TEST(SharedMemoryTest, RanksYieldWhilePollingOnlyWhereTheyOutnumberTheirCpus) {
  const std::vector<int> cpus = allowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs to run on, this process has " << cpus.size();
  const int a = cpus[0];
  const int b = cpus[1];
  for (const auto& rank : attachPinned({a, a})) {
    EXPECT_EQ(rank->cpusOfEveryRank(), 1);
    EXPECT_TRUE(rank->yieldsWhilePolling());
  }
  for (const auto& rank : attachPinned({a, b})) {
    EXPECT_EQ(rank->cpusOfEveryRank(), 2);
    EXPECT_FALSE(rank->yieldsWhilePolling());
  }
  for (const auto& rank : attachPinned({a, b, a})) {
    EXPECT_EQ(rank->cpusOfEveryRank(), 2);
    EXPECT_TRUE(rank->yieldsWhilePolling());
  }
}

TEST(SharedSegmentTest, OpenSeesWhatCreateWrote) {
  const std::string name = "/distrun-test-" + std::to_string(::getpid());
  SharedSegment made = SharedSegment::create(name, 4096);
  std::memcpy(made.data() + 100, "hello", 6);
  SharedSegment opened = SharedSegment::open(name, 4096);
  SharedSegment::unlink(name);
  EXPECT_STREQ(opened.data() + 100, "hello");
  EXPECT_EQ(opened.data()[0], 0);  // zero-filled
  try {
    SharedSegment::open(name, 4096);
    FAIL();
  } catch (const SystemError& e) {
    EXPECT_EQ(std::string(e.what()), "shm_open(" + name + ") failed: No such file or directory");
  }
}

TEST(SharedSegmentTest, ASegmentShorterThanExpectedIsRefused) {
  const std::string name = "/distrun-test-short-" + std::to_string(::getpid());
  SharedSegment made = SharedSegment::create(name, 4096);
  try {
    SharedSegment::open(name, 8192);
    FAIL();
  } catch (const SystemError& e) {
    EXPECT_THAT(e.what(), HasSubstr(name + ": 4096 bytes where 8192 were expected"));
  }
  SharedSegment::unlink(name);
}

}  // namespace
}  // namespace distrun::comm
