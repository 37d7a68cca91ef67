#include "distrun/comm/communicator.h"

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/comm/connect.h"
#include "distrun/comm/gloo/shm/shared_segment.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::comm {
namespace {

using ::testing::HasSubstr;
using testing::runGlooThreads;

std::string usageErrorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(CommunicatorTest, BadArgumentsAreRefusedBeforeAnythingIsSent) {
  auto errors = runGlooThreads(2, [](Communicator& comm) {
    float data[8] = {};
    EXPECT_EQ(usageErrorOf([&] { comm.broadcast(data, data, 8, DataType::kFloat32, 2); }),
              "broadcast: root 2 is not a rank of this world (0..1)");
    EXPECT_EQ(usageErrorOf([&] { comm.send(data, 1, DataType::kFloat32, comm.rank(), 0); }),
              "send: peer " + std::to_string(comm.rank()) + " is this rank itself");
    EXPECT_EQ(usageErrorOf([&] { comm.recv(data, 1, DataType::kFloat32, 1 - comm.rank(), -1); }),
              "recv: tag -1 is negative");
    EXPECT_EQ(usageErrorOf(
                  [&] { comm.allreduce(data, data + 1, 4, DataType::kFloat32, ReduceOp::kSum); }),
              "allreduce: input and output overlap without being in-place (pass "
              "the in-place position exactly, see communicator.h)");
    EXPECT_EQ(
        usageErrorOf([&] { comm.allreduce(nullptr, data, 4, DataType::kFloat32, ReduceOp::kSum); }),
        "allreduce: input is null but count is not 0");
    EXPECT_THAT(usageErrorOf([&] { comm.allgather(data, data, SIZE_MAX / 2, DataType::kFloat64); }),
                HasSubstr("overflows the address space"));
    // Count 0 is a no-op even with null buffers; the world still works.
    comm.allreduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum);
    comm.allreduce(data, 8, ReduceOp::kMax);
  });
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

TEST(CommunicatorTest, AsyncWorkOverlapsTheCaller) {
  auto errors = runGlooThreads(3, [](Communicator& comm) {
    std::vector<double> big(1 << 18, comm.rank() + 1.0);
    std::vector<int64_t> small(5, comm.rank());
    Work a =
        comm.allreduceAsync(big.data(), big.data(), big.size(), DataType::kFloat64, ReduceOp::kSum);
    Work b = comm.allreduceAsync(small.data(), small.data(), small.size(), DataType::kInt64,
                                 ReduceOp::kMax);
    b.wait();
    a.wait();
    EXPECT_EQ(big[12345], 6.0);
    EXPECT_EQ(small[4], 2);
    // A blocking call after asynchronous ones runs after them.
    Work c =
        comm.allreduceAsync(big.data(), big.data(), big.size(), DataType::kFloat64, ReduceOp::kAvg);
    comm.allreduce(small.data(), small.size(), ReduceOp::kSum);
    EXPECT_TRUE(c.isCompleted());
    EXPECT_EQ(big[0], 6.0);
    EXPECT_EQ(small[0], 6);
  });
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
}

// The failures below, with the collectives through shared memory (all
// ranks here share a host; also with every allgather and alltoall reading
// the peers' buffers directly), through TCP, and hierarchical: rank 0 on
// one node, the others on a second (with two ranks, that is TCP again).
enum class Transport { kTcp, kSharedMemory, kSharedMemoryDirect, kTwoNodes };

class CommunicatorFailureTest : public ::testing::TestWithParam<Transport> {
 protected:
  GlooOptions options() const {
    GlooOptions o;
    o.sharedMemory = GetParam() != Transport::kTcp;
    if (GetParam() == Transport::kSharedMemoryDirect) o.sharedDirectFromBytes = 0;
    return o;
  }
  std::function<std::string(int)> nodes() const {
    if (GetParam() != Transport::kTwoNodes) return {};
    return [](int r) { return r == 0 ? "first" : "second"; };
  }
};

TEST_P(CommunicatorFailureTest, LostPeerIsNamedAndTheErrorSticks) {
  auto errors = runGlooThreads(
      3,
      [](Communicator& comm) {
        if (comm.rank() == 2) return;  // leaves: its connections close
        std::vector<float> data(1000, 1.0f);
        try {
          for (int i = 0; i < 100; ++i) comm.allreduce(data.data(), data.size(), ReduceOp::kSum);
          ADD_FAILURE() << "rank " << comm.rank() << " never noticed rank 2 leave";
        } catch (const CommunicationError& e) {
          // Threads share one process's sockets, so which rank is named is
          // checked with processes (comm_process_test); here: it is an error.
          EXPECT_THAT(e.what(), HasSubstr("allreduce: lost "));
          EXPECT_EQ(e.exitCode(), ExitCode::kPeerLost);
        }
        EXPECT_THROW(comm.barrier(), CommunicationError);
      },
      options(), nodes());
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
}

TEST_P(CommunicatorFailureTest, ReduceScatterFailuresNameReduceScatter) {
  auto errors = runGlooThreads(
      2,
      [](Communicator& comm) {
        if (comm.rank() == 1) return;
        std::vector<float> in(2000, 1.0f), out(1000);
        try {
          for (int i = 0; i < 100; ++i) {
            comm.reduceScatter(in.data(), out.data(), out.size(), DataType::kFloat32,
                               ReduceOp::kSum);
          }
          ADD_FAILURE() << "rank 0 never noticed rank 1 leave";
        } catch (const CommunicationError& e) {
          EXPECT_THAT(e.what(), ::testing::StartsWith("reduce_scatter: lost "));
        }
      },
      options());
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

// Every collective names itself when a peer is lost in it, through shared
// memory as through TCP.
TEST_P(CommunicatorFailureTest, EachCollectiveNamesItselfWhenAPeerIsLost) {
  const std::vector<std::pair<std::string, std::function<void(Communicator&)>>> collectives = {
      {"broadcast",
       [](Communicator& comm) {
         std::vector<float> x(1000, 1.0f);
         comm.broadcast(x.data(), x.data(), x.size(), DataType::kFloat32, 1);
       }},
      {"allgather",
       [](Communicator& comm) {
         std::vector<float> in(500, 1.0f), out(in.size() * static_cast<size_t>(comm.size()));
         comm.allgather(in.data(), out.data(), in.size(), DataType::kFloat32);
       }},
      {"alltoall",
       [](Communicator& comm) {
         std::vector<float> in(500 * static_cast<size_t>(comm.size()), 1.0f), out(in.size());
         comm.alltoall(in.data(), out.data(), 500, DataType::kFloat32);
       }},
      {"barrier", [](Communicator& comm) { comm.barrier(); }},
      // Point to point with the rank that leaves: small messages (a sender
      // returns once its pieces are posted, and fails when the channel to
      // the lost rank is full) and large ones (direct where it reads).
      {"send",
       [](Communicator& comm) {
         std::vector<float> x(500, 1.0f);
         comm.send(x.data(), x.size(), DataType::kFloat32, 2, 0);
       }},
      {"recv",
       [](Communicator& comm) {
         std::vector<float> x(1 << 16);
         comm.recv(x.data(), x.size(), DataType::kFloat32, 2, 0);
       }},
      {"sendrecv",
       [](Communicator& comm) {
         std::vector<float> x(1 << 16, 1.0f), y(x.size());
         comm.sendRecv(x.data(), 2, y.data(), 2, x.size(), DataType::kFloat32, 0);
       }},
  };
  for (const auto& [name, call] : collectives) {
    auto errors = runGlooThreads(
        3,
        [&, &name = name, &call = call](Communicator& comm) {
          if (comm.rank() == 2) return;
          try {
            for (int i = 0; i < 100; ++i) call(comm);
            ADD_FAILURE() << name << ": rank " << comm.rank() << " never noticed rank 2 leave";
          } catch (const CommunicationError& e) {
            EXPECT_THAT(e.what(), ::testing::StartsWith(name + ": lost ")) << name;
          }
        },
        options(), nodes());
    EXPECT_EQ(errors, std::vector<std::string>(3, "")) << name;
  }
}

TEST_P(CommunicatorFailureTest, SilentPeerTimesOut) {
  std::atomic<bool> released{false};
  GlooOptions o = options();
  o.timeout = std::chrono::milliseconds(300);
  auto errors = runGlooThreads(
      2,
      [&](Communicator& comm) {
        if (comm.rank() == 1) {
          while (!released) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          return;
        }
        float x = 1;
        try {
          comm.allreduce(&x, 1, ReduceOp::kSum);
          ADD_FAILURE() << "allreduce with a silent peer returned";
        } catch (const TimeoutError& e) {
          EXPECT_THAT(e.what(), HasSubstr("allreduce: rank 0 waited 0.3 s for its peers"));
        }
        released = true;
      },
      o);
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
}

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

INSTANTIATE_TEST_SUITE_P(Transports, CommunicatorFailureTest,
                         ::testing::Values(Transport::kTcp, Transport::kSharedMemory,
                                           Transport::kSharedMemoryDirect, Transport::kTwoNodes),
                         [](const ::testing::TestParamInfo<Transport>& p) {
                           switch (p.param) {
                             case Transport::kTcp:
                               return "tcp";
                             case Transport::kSharedMemory:
                               return "shared_memory";
                             case Transport::kSharedMemoryDirect:
                               return "shared_memory_direct";
                             case Transport::kTwoNodes:
                               return "two_nodes";
                           }
                           return "?";
                         });

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

TEST(ConnectTest, MasterAddrAndPortWithRankZeroHostingTheStore) {
  const int port = pickFreeTcpPort();
  std::vector<std::thread> threads;
  std::vector<double> sums(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      MapEnvironment env{{"RANK", std::to_string(r)},
                         {"WORLD_SIZE", "3"},
                         {"LOCAL_WORLD_SIZE", "3"},
                         {"MASTER_ADDR", "127.0.0.1"},
                         {"MASTER_PORT", std::to_string(port)},
                         {"XDG_CONFIG_HOME", ::testing::TempDir() + "/connect-config"}};
      auto comm = connect(env);
      double x = r + 1;
      comm->allreduce(&x, 1, ReduceOp::kSum);
      sums[static_cast<size_t>(r)] = x;
      comm->barrier();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sums, std::vector<double>(3, 6.0));
}

// A connect/operation budget no healthy run nears.
constexpr std::chrono::milliseconds kGenerousTimeout = std::chrono::seconds(60);

// The variables a rank of a `size`-rank world meeting at the store on
// 127.0.0.1:`storePort` gets.
MapEnvironment storeEnvironment(int rank, int size, int storePort) {
  return MapEnvironment{{"RANK", std::to_string(rank)},
                        {"WORLD_SIZE", std::to_string(size)},
                        {"LOCAL_WORLD_SIZE", std::to_string(size)},
                        {"DISTRUN_STORE", "127.0.0.1:" + std::to_string(storePort)},
                        {"DISTRUN_TOKEN", "t"}};
}

// Rank 0 made two communicators of the group's name before (a world of one
// on a store of its own, and one on the shared store); the two ranks still
// meet, for the group's first communicator and for its second.
TEST(ConnectTest, RanksThatMadeDifferentNumbersOfCommunicatorsBeforeStillMeet) {
  rdzv::StoreServer shared("127.0.0.1", 0, "t");
  const ConnectOptions options{.backend = "gloo", .timeout = kGenerousTimeout, .name = "x"};
  std::vector<std::vector<double>> sums(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        if (r == 0) {
          rdzv::StoreServer own("127.0.0.1", 0, "t");
          connect(storeEnvironment(0, 1, own.port()), options);
          connect(storeEnvironment(0, 1, shared.port()), options);
        }
        for (int k = 0; k < 2; ++k) {
          auto comm = connect(storeEnvironment(r, 2, shared.port()), options);
          double x = r + 1;
          comm->allreduce(&x, 1, ReduceOp::kSum);
          sums[static_cast<size_t>(r)].push_back(x);
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, std::vector<std::string>(2, ""));
  EXPECT_EQ(sums, std::vector<std::vector<double>>(2, {3.0, 3.0}));
}

TEST(ConnectTest, MissingOrMalformedVariablesAreNamed) {
  try {
    connect(MapEnvironment{{"WORLD_SIZE", "2"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("RANK is not set: start this program with distrun run"));
  }
  EXPECT_THROW(connect(MapEnvironment{{"RANK", "2"}, {"WORLD_SIZE", "2"}}), ConfigError);
  try {
    connect(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DISTRUN_STORE", "nohost"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "DISTRUN_STORE='nohost' is not HOST:PORT");
  }
  try {
    connect(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}},
            ConnectOptions{.backend = "nccl", .timeout = {}, .name = "world"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("backend 'nccl' is not one of: auto, gloo"));
  }
  for (const char* threshold :
       {"DISTRUN_GLOO_BCUBE_BELOW", "DISTRUN_GLOO_GATHER_BELOW", "DISTRUN_COMM_SHM_DIRECT_FROM",
        "DISTRUN_GLOO_HIERARCHICAL_ALLGATHER_BELOW"}) {
    try {
      connect(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {threshold, "64K"}});
      FAIL() << threshold;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.what(), std::string(threshold) + "='64K' is not a whole number (unexpected 'K')");
      EXPECT_EQ(e.exitCode(), ExitCode::kConfig);  // 78
    }
  }
  for (const char* flag : {"DISTRUN_COMM_SPIN", "DISTRUN_COMM_SHM", "DISTRUN_COMM_SHM_BUFFERS"}) {
    try {
      connect(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {flag, "2"}});
      FAIL() << flag;
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string(flag) + "='2'"));
      EXPECT_EQ(e.exitCode(), ExitCode::kConfig);  // 78
    }
  }
}

}  // namespace
}  // namespace distrun::comm
