// GlooMesh alone: Gloo's collectives on meshes of ranks that are threads of
// this process, over loopback TCP, meeting in an in-memory store (the
// communicator built on them: gloo_contract_test and the contract suite).
#include "distrun/comm/gloo/gloo_mesh.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include "distrun/comm/gloo/store_adapter.h"
#include "distrun/rdzv/in_memory_store.h"

namespace distrun::comm {
namespace {

using namespace std::chrono_literals;

// Runs `body(mesh)` on `ranks` threads, each a rank of one mesh joined under
// `keys`; the device is each thread's own.
void onMesh(int ranks, const GlooMeshTuning& tuning, const std::function<void(GlooMesh&)>& body) {
  rdzv::InMemoryStore store;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        gloo::transport::tcp::attr attr;
        attr.hostname = "127.0.0.1";
        auto device = gloo::transport::tcp::CreateDevice(attr);
        auto context = std::make_shared<gloo::rendezvous::Context>(r, ranks);
        context->setTimeout(tuning.timeout);
        GlooStoreAdapter adapter(store, "mesh/", tuning.timeout);
        context->connectFullMesh(adapter, device);
        GlooMesh mesh(std::move(context), tuning);
        body(mesh);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

// GlooOptions' defaults: gather below 128 KB on up to 4 ranks, bcube below
// 4 MB, ring segments of 4 MB.
GlooMeshTuning tuning() {
  GlooMeshTuning t;
  t.timeout = 20s;
  t.bcubeBelowBytes = 4 << 20;
  t.gatherBelowBytes = 128 << 10;
  t.gatherMaxRanks = 4;
  t.maxSegmentBytes = 4 << 20;
  return t;
}

TEST(GlooMeshTest, AllreduceTakesGatherOnFewRanksThenBcubeThenRing) {
  GlooMeshTuning t = tuning();
  EXPECT_STREQ(allreduceAlgorithm(1024, 2, t), "gather");
  EXPECT_STREQ(allreduceAlgorithm(1024, 4, t), "gather");
  EXPECT_STREQ(allreduceAlgorithm(1024, 5, t), "bcube");
  EXPECT_STREQ(allreduceAlgorithm(1024, 1, t), "bcube");  // nobody to gather from
  EXPECT_STREQ(allreduceAlgorithm(128 << 10, 2, t), "bcube");
  EXPECT_STREQ(allreduceAlgorithm((4 << 20) - 1, 2, t), "bcube");
  EXPECT_STREQ(allreduceAlgorithm(4 << 20, 2, t), "ring");
  t.gatherBelowBytes = 0;
  EXPECT_STREQ(allreduceAlgorithm(1, 2, t), "bcube");
}

// Every algorithm sums the same on three ranks, in place and out of place.
TEST(GlooMeshTest, EveryAllreduceAlgorithmSumsAlike) {
  for (auto [gatherBelow, bcubeBelow] :
       {std::pair<size_t, size_t>{1 << 20, 1 << 20}, {0, 1 << 20}, {0, 0}}) {
    GlooMeshTuning t = tuning();
    t.gatherBelowBytes = gatherBelow;
    t.bcubeBelowBytes = bcubeBelow;
    onMesh(3, t, [](GlooMesh& mesh) {
      std::vector<float> in(1000), out(1000);
      std::iota(in.begin(), in.end(), static_cast<float>(mesh.rank()));
      mesh.allreduce(in.data(), out.data(), in.size(), DataType::kFloat32, ReduceOp::kSum);
      mesh.allreduce(in.data(), in.data(), in.size(), DataType::kFloat32, ReduceOp::kSum);
      for (size_t i = 0; i < in.size(); ++i) {
        const float expected = 3.0f * static_cast<float>(i) + 3.0f;  // (i + 0) + (i + 1) + (i + 2)
        ASSERT_EQ(out[i], expected) << i;
        ASSERT_EQ(in[i], expected) << i;
      }
    });
  }
}

TEST(GlooMeshTest, BroadcastsAllgathersAndExchanges) {
  onMesh(3, tuning(), [](GlooMesh& mesh) {
    const auto r = static_cast<int64_t>(mesh.rank());
    std::vector<int64_t> data{r, r, r};
    mesh.broadcast(data.data(), data.data(), data.size(), DataType::kInt64, 2);
    EXPECT_EQ(data, (std::vector<int64_t>{2, 2, 2}));

    std::vector<int64_t> gathered(6);
    std::vector<int64_t> mine{10 * r, 10 * r + 1};
    mesh.allgather(mine.data(), gathered.data(), 2, DataType::kInt64);
    EXPECT_EQ(gathered, (std::vector<int64_t>{0, 1, 10, 11, 20, 21}));

    // Rank k gives k + 1 elements.
    std::vector<int64_t> some(static_cast<size_t>(r) + 1, r);
    std::vector<int64_t> all(6);
    mesh.allgatherv(some.data(), all.data(), {1, 2, 3}, DataType::kInt64);
    EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 1, 2, 2, 2}));

    // Block k of rank r is 10 r + k; in place.
    std::vector<int64_t> blocks{10 * r, 10 * r + 1, 10 * r + 2};
    mesh.alltoall(blocks.data(), blocks.data(), 1, DataType::kInt64);
    EXPECT_EQ(blocks, (std::vector<int64_t>{r, 10 + r, 20 + r}));

    // Rank r sends one element to each; rank 0 also one more to rank 1.
    std::vector<size_t> sends{1, 1, 1}, recvs{1, 1, 1};
    if (r == 0) sends[1] = 2;
    if (r == 1) recvs[0] = 2;
    std::vector<int64_t> in(r == 0 ? 4 : 3, r), out(r == 1 ? 4 : 3, -1);
    mesh.alltoallv(in.data(), out.data(), sends, recvs, DataType::kInt64);
    EXPECT_EQ(out, r == 1 ? (std::vector<int64_t>{0, 0, 1, 2}) : (std::vector<int64_t>{0, 1, 2}));
    mesh.barrier();
  });
}

// A second mesh of some of the ranks (the nodes' leaders' of the
// hierarchical path) counts its own tags: its operations do not shift the
// tags of every rank's mesh, which the other ranks did not take part in.
TEST(GlooMeshTest, EachMeshCountsItsOwnTags) {
  rdzv::InMemoryStore store;
  std::vector<std::thread> threads;
  std::vector<int64_t> sums(3, -1);
  std::vector<std::string> errors(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        gloo::transport::tcp::attr attr;
        attr.hostname = "127.0.0.1";
        auto device = gloo::transport::tcp::CreateDevice(attr);
        auto join = [&](int rank, int size, const std::string& keys) {
          auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
          context->setTimeout(5s);
          GlooStoreAdapter adapter(store, keys, 5s);
          context->connectFullMesh(adapter, device);
          GlooMeshTuning t = tuning();
          t.timeout = 5s;
          return std::make_unique<GlooMesh>(std::move(context), t);
        };
        auto all = join(r, 3, "all/");
        if (r < 2) {  // ranks 0 and 1 only
          auto pair = join(r, 2, "pair/");
          pair->barrier();
          pair->barrier();
        }
        int64_t value = r + 1;
        all->allreduce(&value, &value, 1, DataType::kInt64, ReduceOp::kSum);
        sums[static_cast<size_t>(r)] = value;
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors, (std::vector<std::string>(3)));
  EXPECT_EQ(sums, (std::vector<int64_t>{6, 6, 6}));
}

}  // namespace
}  // namespace distrun::comm
