// The Gloo backend's shared-memory path as a whole (ranks on one host):
// what it leaves behind, how a failure reaches the ranks waiting in it,
// mismatched calls, reducible memory and streamed allgathers. The engine on
// its own is distrun/comm/shm/'s tests; the contract over every count is
// gloo_contract_test.cc's.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/comm/communicator.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/error.h"

namespace distrun::comm {
namespace {

using ::testing::HasSubstr;
using testing::runGlooThreads;

// A rank that gives up on TCP (its peer there is gone) tells the ranks
// waiting for it in shared memory at once: rank 1 fails while rank 0, the
// one it waits for, is still alive and holds its communicator.
TEST(SharedMemoryTest, ARankThatFailsElsewhereReleasesItsWaitingPeers) {
  std::atomic<bool> rank1Failed{false};
  std::atomic<bool> rank0Alive{true};
  bool failedWhileRank0Alive = false;
  GlooOptions o;
  o.timeout = std::chrono::seconds(60);
  auto errors = runGlooThreads(
      3,
      [&](Communicator& comm) {
        float x = 1;
        if (comm.rank() == 2) {  // leaves once rank 1 waits in shared memory
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          return;
        }
        try {
          if (comm.rank() == 0) {
            comm.barrier();  // fails: rank 2 left
          } else {
            comm.allreduce(&x, 1, ReduceOp::kSum);  // waits for rank 0
          }
          ADD_FAILURE() << "rank " << comm.rank() << " returned";
        } catch (const CommunicationError& e) {
          if (comm.rank() == 1) {
            failedWhileRank0Alive = rank0Alive;
            rank1Failed = true;
            EXPECT_THAT(e.what(), HasSubstr("allreduce: "));
          }
        }
        if (comm.rank() == 0) {  // stays, up to 20 s, until rank 1 has failed
          for (int i = 0; i < 2000 && !rank1Failed; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          rank0Alive = false;
        }
      },
      o);
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
  EXPECT_TRUE(failedWhileRank0Alive);
}

// Once every rank has mapped the segment, its name is gone: nothing is
// left in /dev/shm however the job ends.
TEST(SharedMemoryTest, LeavesNothingInDevShm) {
  const std::string mine = "distrun-" + std::to_string(::getpid()) + "-";
  auto errors = runGlooThreads(2, [&](Communicator& comm) {
    std::vector<double> x(100, comm.rank() + 1.0);
    comm.allreduce(x.data(), x.size(), ReduceOp::kSum);
    EXPECT_EQ(x[99], 3.0);
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
      EXPECT_EQ(entry.path().filename().string().rfind(mine, 0), std::string::npos) << entry.path();
    }
  });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

// A segment /dev/shm cannot hold (16 TiB slots) is refused when it is
// made, not with a SIGBUS later; every rank then uses TCP, and says so.
TEST(SharedMemoryTest, ASegmentThatCannotBeMadeLeavesEveryRankOnTcp) {
  GlooOptions o;
  o.sharedSlotBytes = size_t{1} << 44;
  ::testing::internal::CaptureStderr();
  auto errors = runGlooThreads(
      2,
      [](Communicator& comm) {
        std::vector<float> x(1000, static_cast<float>(comm.rank() + 1));
        comm.allreduce(x.data(), x.size(), ReduceOp::kSum);
        EXPECT_EQ(x[999], 3.0f);
      },
      o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
  EXPECT_THAT(err, HasSubstr("distrun: warning: rank 0: no shared-memory collectives, the ranks "
                             "use TCP: posix_fallocate(/distrun-"));
  EXPECT_THAT(err, HasSubstr("rank 1: no shared-memory collectives, the ranks use TCP: rank 0 "
                             "did not create the segment"));
}

// allocateReducible with shared memory: each rank's buffer is its region
// of one segment, so what one rank writes there the others' allreduce
// reads where it lies; the sum lands in every rank's buffer.
TEST(SharedMemoryTest, ReducibleMemoryIsSummedWhereItLies) {
  auto errors = runGlooThreads(3, [](Communicator& comm) {
    std::shared_ptr<void> memory = comm.allocateReducible(3 * 1000 * sizeof(float));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(memory.get()) % 64, 0u);
    auto* x = static_cast<float*>(memory.get()) + 1000;  // at the same offset everywhere
    std::fill(x, x + 1000, static_cast<float>(comm.rank() + 1));
    comm.allreduceAsync(x, x, 1000, DataType::kFloat32, ReduceOp::kAvg).wait();
    EXPECT_EQ(x[0], 2.0f);
    EXPECT_EQ(x[999], 2.0f);
    comm.allreduce(x, 1000, ReduceOp::kMax);
    EXPECT_EQ(x[500], 2.0f);
  });
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
}

// The ways an allreduce goes through shared memory.
enum class AllreducePath { kEveryRankReducesAll, kByShares, kReadDirectly };

// Each rank's allreduce results of `count` floats on `path`: rank-specific
// values whose sum depends on the order of the additions, so only the same
// order gives the same bits.
std::vector<std::vector<float>> allreduceResults(size_t count, AllreducePath path, bool inPlace) {
  std::vector<std::vector<float>> results(3);
  GlooOptions o;
  o.sharedAllreduceSharesFromBytes = path == AllreducePath::kByShares ? 0 : SIZE_MAX;
  o.sharedDirectAllreduceFromBytes = 0;
  o.sharedDirectAllreduceBelowBytes = path == AllreducePath::kReadDirectly ? SIZE_MAX : 0;
  auto errors = runGlooThreads(
      3,
      [&](Communicator& comm) {
        std::vector<float> in(count);
        for (size_t i = 0; i < count; ++i) {
          in[i] = 1.0f / static_cast<float>(i % 97 + 1) * static_cast<float>(comm.rank() * 7 + 1) +
                  (comm.rank() == 1 ? 1e7f : 0.0f);
        }
        std::vector<float> out(count);
        if (inPlace) {
          comm.allreduce(in.data(), count, ReduceOp::kSum);
          out = in;
        } else {
          comm.allreduceAsync(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum)
              .wait();
        }
        results[static_cast<size_t>(comm.rank())] = out;
      },
      o);
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
  return results;
}

// An allreduce by shares or read directly whose shares span several blocks
// and chunks (each rank reduces ~100K floats, a chunk is 32K, a block 4K),
// and several slots (3 pieces of 1M floats), gives every rank the bits of
// every rank reducing everything, in place and out of place.
TEST(SharedMemoryTest, AllreducesByEveryPathGiveEveryRankTheSameBits) {
  for (size_t count : {size_t{300'007}, size_t{2'500'003}}) {
    for (bool inPlace : {true, false}) {
      const auto all = allreduceResults(count, AllreducePath::kEveryRankReducesAll, inPlace);
      for (AllreducePath path : {AllreducePath::kByShares, AllreducePath::kReadDirectly}) {
        const auto results = allreduceResults(count, path, inPlace);
        for (size_t r = 0; r < 3; ++r) {
          ASSERT_EQ(results[r].size(), count);
          EXPECT_EQ(std::memcmp(results[r].data(), all[0].data(), count * sizeof(float)), 0)
              << "rank " << r << ", path " << static_cast<int>(path)
              << (inPlace ? ", in place" : ", out of place") << ", " << count << " floats";
        }
        // Rank order: (a0 + a1) + a2, which differs from a0 + (a1 + a2) here.
        const float a0 = 1.0f / 3.0f;
        EXPECT_EQ(results[2][2], (a0 + (a0 * 8 + 1e7f)) + a0 * 15);
      }
    }
  }
}

// Ranks that reduce different parts of their buffers (or one its buffer
// and another ordinary memory) would sum unrelated data: every rank fails
// instead, naming what each called.
TEST(SharedMemoryTest, RanksThatReduceDifferentPartsOfTheirBuffersFail) {
  auto errors = runGlooThreads(2, [](Communicator& comm) {
    std::shared_ptr<void> memory = comm.allocateReducible(4096);
    auto* x = static_cast<float*>(memory.get());
    const size_t offset = comm.rank() == 0 ? 0 : 16;
    try {
      comm.allreduce(x + offset, 100, ReduceOp::kSum);
      ADD_FAILURE() << "rank " << comm.rank() << " returned";
    } catch (const CommunicationError& e) {
      EXPECT_THAT(e.what(),
                  HasSubstr(fmt::format(
                      "allreduce: rank {} called allreduce(sum, 100 x float, in "
                      "place at byte {} of shared buffer 0) where this rank called "
                      "allreduce(sum, 100 x float, in place at byte {} of shared "
                      "buffer 0)",
                      1 - comm.rank(), comm.rank() == 0 ? 64 : 0, comm.rank() == 0 ? 0 : 64)));
    }
  });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
  errors = runGlooThreads(2, [](Communicator& comm) {
    std::shared_ptr<void> memory = comm.allocateReducible(4096);
    std::vector<float> ordinary(100);
    float* x = comm.rank() == 0 ? static_cast<float*>(memory.get()) : ordinary.data();
    EXPECT_THROW(comm.allreduce(x, 100, ReduceOp::kSum), CommunicationError);
  });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

// Ranks that call different collectives at once fail, each naming what the
// other called, instead of reading each other's data as their own.
TEST(SharedMemoryTest, RanksThatCallDifferentCollectivesFail) {
  auto errors = runGlooThreads(2, [](Communicator& comm) {
    std::vector<float> x(8, 1.0f), gathered(16);
    try {
      if (comm.rank() == 0) {
        comm.broadcast(x.data(), x.data(), x.size(), DataType::kFloat32, 0);
      } else {
        comm.allgather(x.data(), gathered.data(), x.size(), DataType::kFloat32);
      }
      ADD_FAILURE() << "rank " << comm.rank() << " returned";
    } catch (const CommunicationError& e) {
      const std::string broadcast = "broadcast(8 x float, root 0)";
      const std::string allgather = "allgather(8 x float)";
      EXPECT_THAT(
          e.what(),
          HasSubstr(comm.rank() == 0
                        ? "rank 1 called " + allgather + " where this rank called " + broadcast
                        : "rank 0 called " + broadcast + " where this rank called " + allgather));
    }
  });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

// Messages between two ranks arrive in order; a receive whose next message
// carries another tag (or length) would wait for ever, since its
// sender waits for it in turn: it fails at once, naming both, and the
// sender's next call fails too instead of waiting.
TEST(SharedMemoryTest, AReceiveOfAnotherMessageThanTheNextFailsAtOnce) {
  GlooOptions o;
  o.timeout = std::chrono::seconds(60);
  auto errors = runGlooThreads(
      2,
      [](Communicator& comm) {
        std::vector<int64_t> x(8, 1);
        try {
          if (comm.rank() == 0) {
            comm.send(x.data(), x.size(), DataType::kInt64, 1, 1);
            comm.send(x.data(), 4, DataType::kInt64, 1, 2);
          } else {
            comm.recv(x.data(), 4, DataType::kInt64, 0, 2);
          }
          comm.barrier();
          ADD_FAILURE() << "rank " << comm.rank() << " returned";
        } catch (const CommunicationError& e) {
          if (comm.rank() == 1) {
            EXPECT_THAT(e.what(), HasSubstr("recv: rank 0's next message to this rank is 8 x "
                                            "int64 with tag 1, where this rank receives 4 x "
                                            "int64 with tag 2"));
          }
        }
      },
      o);
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

// A sender returns once its message is posted; if it then leaves (its
// communicator goes), the message is still in the channel, and the
// receiver gets it rather than "lost rank 0". The third message waits for
// the receiver to take the first, so rank 0 posts it and leaves while rank
// 1 may already wait: the window this checks (not every run hits it).
TEST(SharedMemoryTest, MessagesPostedBeforeTheSenderLeftAreReceived) {
  for (int round = 0; round < 10; ++round) {
    auto errors = runGlooThreads(2, [](Communicator& comm) {
      for (int32_t k = 0; k < 3; ++k) {
        std::vector<int32_t> x(16, comm.rank() == 0 ? k : -1);
        if (comm.rank() == 0) {
          comm.send(x.data(), x.size(), DataType::kInt32, 1, 5);
        } else {
          comm.recv(x.data(), x.size(), DataType::kInt32, 0, 5);
          EXPECT_EQ(x[15], k);
        }
      }
    });
    EXPECT_EQ(errors, std::vector<std::string>(2, "")) << "round " << round;
  }
}

// Once a rank has given up, its peers' next send or recv fails as their
// next collective does, even where a message is waiting (a direct one's
// buffer may be gone with the rank's failed call).
TEST(SharedMemoryTest, AfterARankGaveUpAReceiveFails) {
  std::atomic<bool> rank0Failed{false};
  GlooOptions o;
  o.timeout = std::chrono::seconds(60);
  auto errors = runGlooThreads(
      3,
      [&](Communicator& comm) {
        std::vector<float> x(8, 1.0f);
        if (comm.rank() == 2) return;  // leaves: rank 0's sends to it fail
        if (comm.rank() == 0) {
          comm.send(x.data(), x.size(), DataType::kFloat32, 1, 3);
          EXPECT_THROW(
              {
                for (int i = 0; i < 100; ++i)
                  comm.send(x.data(), x.size(), DataType::kFloat32, 2, 0);
              },
              CommunicationError);
          rank0Failed = true;
          return;
        }
        while (!rank0Failed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        try {
          comm.recv(x.data(), x.size(), DataType::kFloat32, 0, 3);
          ADD_FAILURE() << "rank 1 received from a communicator that failed";
        } catch (const CommunicationError& e) {
          EXPECT_THAT(e.what(), ::testing::StartsWith("recv: "));
        }
      },
      o);
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
}

// A buffer the segment cannot be made for (here: larger than this
// process may make a file, RLIMIT_FSIZE): every rank says so and gets
// ordinary memory, which reduces like any other; the next buffer is shared
// again.
TEST(SharedMemoryTest, ABufferNoSegmentCanHoldIsOrdinaryMemory) {
  GlooOptions o;
  o.sharedSlotBytes = 256;  // the slots' segment stays under the limit
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit limit = saved;
  limit.rlim_cur = 1 << 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  const auto savedSignal = ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead
  ::testing::internal::CaptureStderr();
  auto errors = runGlooThreads(
      2,
      [&](Communicator& comm) {
        std::shared_ptr<void> big = comm.allocateReducible(2 << 20);
        auto* x = static_cast<double*>(big.get());
        x[7] = comm.rank() + 1.0;
        comm.allreduce(x + 7, 1, ReduceOp::kSum);
        EXPECT_EQ(x[7], 3.0);
        std::shared_ptr<void> small = comm.allocateReducible(64);
        auto* y = static_cast<double*>(small.get());
        y[1] = comm.rank() + 1.0;
        comm.allreduce(y + 1, 1, ReduceOp::kSum);
        EXPECT_EQ(y[1], 3.0);
      },
      o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::signal(SIGXFSZ, savedSignal);
  ::setrlimit(RLIMIT_FSIZE, &saved);
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
  EXPECT_THAT(err, HasSubstr("distrun: warning: rank 0: no shared buffer, allreduces on it copy "
                             "through the slots: posix_fallocate(/distrun-"));
  EXPECT_THAT(err, HasSubstr("rank 1: no shared buffer, allreduces on it copy through the "
                             "slots: rank 0 did not create the segment"));
  EXPECT_EQ(err.find("no shared-memory collectives"), std::string::npos) << err;
  size_t warnings = 0;  // one per rank: the small buffer is shared
  for (size_t at = 0; (at = err.find("no shared buffer", at)) != std::string::npos; ++at) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 2u) << err;
}

// Streamed allgathers of several slots' worth a rank (4 MiB slots: 2
// pieces of each block), in place and not: every rank gets every block.
TEST(SharedMemoryTest, AStreamedAllgatherGivesEveryRankEveryBlock) {
  constexpr size_t kCount = 1'500'007;
  for (bool inPlace : {true, false}) {
    GlooOptions o;
    o.sharedStreamingFromBytes = 0;
    auto errors = runGlooThreads(
        3,
        [&](Communicator& comm) {
          std::vector<float> out(3 * kCount, -1.0f);
          std::vector<float> own(kCount);
          float* in = inPlace ? out.data() + static_cast<size_t>(comm.rank()) * kCount : own.data();
          for (size_t i = 0; i < kCount; ++i) {
            in[i] = static_cast<float>(comm.rank() * 1000 + static_cast<int>(i % 997));
          }
          comm.allgather(in, out.data(), kCount, DataType::kFloat32);
          for (int r = 0; r < 3; ++r) {
            for (size_t i = 0; i < kCount; i += 1 + i % 13) {
              ASSERT_EQ(out[static_cast<size_t>(r) * kCount + i],
                        static_cast<float>(r * 1000 + static_cast<int>(i % 997)))
                  << "block " << r << ", element " << i << (inPlace ? ", in place" : "");
            }
          }
          EXPECT_EQ(out.back(), static_cast<float>(2000 + static_cast<int>((kCount - 1) % 997)));
        },
        o);
    EXPECT_EQ(errors, std::vector<std::string>(3, ""));
  }
}

}  // namespace
}  // namespace distrun::comm
