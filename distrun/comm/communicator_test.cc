#include "distrun/comm/communicator.h"

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/comm/connect.h"
#include "distrun/comm/reduce.h"
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
// By default the spinner runs only where no other node shares the machine:
// two agents on one machine are two sessions, and an idle-class thread is
// idle only within its own (GlooOptions::Spin).
TEST(GlooSpinTest, SpinsUnlessAnotherNodeSharesTheMachine) {
  using Spin = GlooOptions::Spin;
  auto spinning = [](Spin spin, const std::function<std::string(int)>& nodeOf) {
    std::vector<int> spins(3, -1);
    GlooOptions options;
    options.spinWhileWaiting = spin;
    const auto errors = runGlooThreads(
        3,
        [&](Communicator& comm) {
          spins[static_cast<size_t>(comm.rank())] =
              dynamic_cast<GlooCommunicator&>(comm).spinsWhileWaiting();
        },
        options, nodeOf);
    EXPECT_EQ(errors, std::vector<std::string>(3, ""));
    return spins;
  };
  const auto twoNodes = [](int r) { return r == 0 ? "first" : "second"; };
  using Spins = std::vector<int>;
  EXPECT_EQ(spinning(Spin::kWhereNoOtherNodeSharesTheMachine, {}), Spins({1, 1, 1}));
  EXPECT_EQ(spinning(Spin::kWhereNoOtherNodeSharesTheMachine, twoNodes), Spins({0, 0, 0}));
  EXPECT_EQ(spinning(Spin::kAlways, twoNodes), Spins({1, 1, 1}));
  EXPECT_EQ(spinning(Spin::kNever, {}), Spins({0, 0, 0}));
}

enum class Transport { kTcp, kSharedMemory, kSharedMemoryDirect, kTwoNodes };

class CommunicatorFailureTest : public ::testing::TestWithParam<Transport> {
 protected:
  GlooOptions options() const {
    GlooOptions o;
    o.sharedMemory = GetParam() != Transport::kTcp;
    return GetParam() == Transport::kSharedMemoryDirect ? testing::readingPeersDirectly(o) : o;
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
      // A ring shift: on two nodes, rank 1 sends within its node (to rank
      // 2) while it receives from the other (rank 0).
      {"sendrecv",
       [](Communicator& comm) {
         const int n = comm.size();
         std::vector<float> x(500, 1.0f), y(x.size());
         comm.sendRecv(x.data(), (comm.rank() + 1) % n, y.data(), (comm.rank() + n - 1) % n,
                       x.size(), DataType::kFloat32, 1);
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

// DISTRUN_COMM_SIMD picks the reduction kernels of the whole process.
TEST(ConnectTest, SimdPicksTheReductionKernels) {
  MapEnvironment env{{"RANK", "0"},
                     {"WORLD_SIZE", "1"},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", std::to_string(pickFreeTcpPort())},
                     {"XDG_CONFIG_HOME", ::testing::TempDir() + "/connect-config"},
                     {"DISTRUN_COMM_SIMD", "baseline"}};
  auto comm = connect(env);
  EXPECT_EQ(instructionsFor(DataType::kFloat32), Instructions::kBaseline);
  EXPECT_EQ(instructionsFor(DataType::kBFloat16), Instructions::kBaseline);
  float x = 2.5f;
  comm->allreduce(&x, 1, ReduceOp::kSum);
  EXPECT_EQ(x, 2.5f);
  useInstructions(std::nullopt);
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
            ConnectOptions{.backend = "hccl", .timeout = {}, .name = "world"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("backend 'hccl' is not one of: auto, gloo"));
  }
  for (const char* threshold :
       {"DISTRUN_GLOO_BCUBE_BELOW", "DISTRUN_GLOO_GATHER_BELOW", "DISTRUN_COMM_SHM_DIRECT_FROM",
        "DISTRUN_GLOO_HIERARCHICAL_ALLGATHER_BELOW", "DISTRUN_GLOO_HIERARCHICAL_ALLTOALL_BELOW",
        "DISTRUN_COMM_SHM_ALLREDUCE_SHARES_FROM", "DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_FROM",
        "DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_BELOW", "DISTRUN_COMM_SHM_DIRECT_BROADCAST_FROM",
        "DISTRUN_COMM_SHM_DIRECT_BROADCAST_BELOW", "DISTRUN_COMM_SHM_STREAMING_FROM",
        "DISTRUN_COMM_SHM_ALLREDUCE_CHOICE_FROM", "DISTRUN_COMM_SHM_ALLGATHER_CHOICE_FROM"}) {
    try {
      connect(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {threshold, "64K"}});
      FAIL() << threshold;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.what(), std::string(threshold) + "='64K' is not a whole number (unexpected 'K')");
      EXPECT_EQ(e.exitCode(), ExitCode::kConfig);  // 78
    }
  }
  try {
    connect(MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DISTRUN_COMM_SIMD", "sse9"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "DISTRUN_COMM_SIMD='sse9' is not one of: auto, baseline, avx2, avx512");
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);  // 78
  }
  try {
    connect(
        MapEnvironment{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"DISTRUN_COMM_MPI_THREADS", "many"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "DISTRUN_COMM_MPI_THREADS='many' is not one of: serialized, funneled, single");
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);  // 78
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
