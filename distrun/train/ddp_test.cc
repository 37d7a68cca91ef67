#include "distrun/train/ddp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "distrun/comm/testing/contract.h"
#include "distrun/common/error.h"
#include "distrun/train/tensor_comm.h"

namespace distrun::train {
namespace {

using comm::Communicator;
using comm::testing::runGlooThreads;

// Two layers plus a branch that only some inputs take and a layer nobody
// uses: enough to exercise buckets, unused and never-used parameters.
struct Net : torch::nn::Module {
  explicit Net(int64_t hidden = 16)
      : fc1(register_module("fc1", torch::nn::Linear(8, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, 3))),
        branch(register_module("branch", torch::nn::Linear(hidden, 3))),
        unused(register_module("unused", torch::nn::Linear(3, 3))) {}
  torch::Tensor forward(const torch::Tensor& x, bool takeBranch = false) {
    torch::Tensor h = torch::relu(fc1->forward(x));
    torch::Tensor y = fc2->forward(h);
    return takeBranch ? y + branch->forward(h) : y;
  }
  torch::nn::Linear fc1, fc2, branch, unused;
};

torch::Tensor globalInputs(int64_t rows) {
  return torch::linspace(-2, 2, rows * 8, torch::kDouble).view({rows, 8}).sin().to(torch::kFloat);
}

// Rank r's share of a global batch of perRank * world rows.
torch::Tensor shard(const torch::Tensor& all, int rank, int64_t perRank) {
  return all.narrow(0, rank * perRank, perRank);
}

std::vector<torch::Tensor> gradsOf(Net& net) {
  std::vector<torch::Tensor> out;
  for (const auto& p : net.parameters()) {
    out.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  }
  return out;
}

// The single-process reference: the same (seeded) model, one backward on
// the union of the ranks' batches.
std::vector<torch::Tensor> referenceGradients(const torch::Tensor& inputs) {
  torch::manual_seed(1);
  Net net;
  net.forward(inputs).pow(2).mean().backward();
  return gradsOf(net);
}

void expectClose(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                 const std::string& where) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].defined(), want[i].defined()) << where << " param " << i;
    if (!want[i].defined()) continue;
    EXPECT_TRUE(torch::allclose(got[i], want[i], /*rtol=*/1e-5, /*atol=*/1e-6))
        << where << " param " << i << "\n"
        << got[i] << "\nvs\n"
        << want[i];
  }
}

// Every rank's flattened parameters, gathered: true when all are bitwise equal.
bool bitwiseEqualAcrossRanks(Communicator& comm, torch::nn::Module& net) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : net.parameters()) flat.push_back(p.detach().reshape({-1}));
  torch::Tensor mine = torch::cat(flat).contiguous();
  torch::Tensor all = torch::empty({comm.size(), mine.numel()});
  comm.allgather(mine.data_ptr(), all.data_ptr(), static_cast<size_t>(mine.numel()),
                 comm::DataType::kFloat32);
  for (int r = 0; r < comm.size(); ++r) {
    if (std::memcmp(all[r].data_ptr(), mine.data_ptr(), mine.nbytes()) != 0) return false;
  }
  return true;
}

// Rank 0 builds the reference's model (seed 1), the others different ones,
// which the construction broadcast must overwrite.
std::shared_ptr<Net> makeNet(int rank, int64_t hidden = 16) {
  static std::mutex mutex;  // seeding is process-wide
  std::lock_guard<std::mutex> lock(mutex);
  torch::manual_seed(rank == 0 ? 1 : 100 + rank);
  return std::make_shared<Net>(hidden);
}

void expectNoErrors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

struct Variant {
  int world;
  double bucketCapMb;
  bool overlap;
  bool gradientAsBucketView = true;
};

class DdpGradientTest : public ::testing::TestWithParam<Variant> {};

TEST_P(DdpGradientTest, GradientsEqualSingleProcessOnTheUnionOfBatches) {
  const Variant v = GetParam();
  const int64_t perRank = 5;
  const torch::Tensor inputs = globalInputs(perRank * v.world);
  const std::vector<torch::Tensor> want = referenceGradients(inputs);
  expectNoErrors(runGlooThreads(v.world, [&](Communicator& comm) {
    std::shared_ptr<Net> owner = makeNet(comm.rank());
    Net& net = *owner;
    DistributedDataParallel ddp(net, comm,
                                {.bucketCapMb = v.bucketCapMb,
                                 .firstBucketMb = v.bucketCapMb,
                                 .overlap = v.overlap,
                                 .gradientAsBucketView = v.gradientAsBucketView});
    net.forward(shard(inputs, comm.rank(), perRank)).pow(2).mean().backward();
    expectClose(gradsOf(net), want, "rank " + std::to_string(comm.rank()));
  }));
}

INSTANTIATE_TEST_SUITE_P(WorldsBucketsOverlap, DdpGradientTest,
                         ::testing::Values(Variant{1, 25, true}, Variant{2, 25, true},
                                           Variant{3, 25, true}, Variant{4, 25, true},
                                           Variant{2, 0.0001, true}, Variant{3, 0.0001, true},
                                           Variant{4, 0.0001, false}, Variant{2, 25, false},
                                           Variant{2, 25, true, false},
                                           Variant{3, 0.0001, true, false}),
                         [](const ::testing::TestParamInfo<Variant>& p) {
                           return "world" + std::to_string(p.param.world) +
                                  (p.param.bucketCapMb < 1 ? "_tinyBuckets" : "_oneBucket") +
                                  (p.param.overlap ? "_overlap" : "_noOverlap") +
                                  (p.param.gradientAsBucketView ? "" : "_copiedGradients");
                         });

TEST(DdpTest, ParametersStayBitwiseEqualAcrossRanksWhileTraining) {
  expectNoErrors(runGlooThreads(3, [](Communicator& comm) {
    Net net;
    DistributedDataParallel ddp(net, comm,
                                {.bucketCapMb = 0.0001, .firstBucketMb = 0.0001, .overlap = true});
    torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    for (int step = 0; step < 20; ++step) {
      const torch::Tensor x = globalInputs(4 * 3).narrow(0, 4 * comm.rank(), 4) * (step + 1);
      sgd.zero_grad();
      net.forward(x, step % 2 == 0).pow(2).mean().backward();
      sgd.step();
    }
    EXPECT_TRUE(bitwiseEqualAcrossRanks(comm, net)) << "rank " << comm.rank();
  }));
}

TEST(DdpTest, NoSyncAccumulatesLocallyAndTheNextBackwardAveragesTheSum) {
  const int world = 2;
  const int64_t perRank = 3;
  const torch::Tensor first = globalInputs(perRank * world);
  const torch::Tensor second = first.flip(0) * 0.5;
  torch::manual_seed(1);
  Net reference;
  reference.forward(first).pow(2).mean().backward();
  reference.forward(second).pow(2).mean().backward();
  const std::vector<torch::Tensor> want = gradsOf(reference);
  expectNoErrors(runGlooThreads(world, [&](Communicator& comm) {
    std::shared_ptr<Net> owner = makeNet(comm.rank());
    Net& net = *owner;
    DistributedDataParallel ddp(net, comm,
                                {.bucketCapMb = 0.0001, .firstBucketMb = 0.0001, .overlap = true});
    {
      auto guard = ddp.noSync();
      net.forward(shard(first, comm.rank(), perRank)).pow(2).mean().backward();
    }
    EXPECT_EQ(ddp.stats().syncedSteps, 0);
    net.forward(shard(second, comm.rank(), perRank)).pow(2).mean().backward();
    EXPECT_EQ(ddp.stats().syncedSteps, 1);
    expectClose(gradsOf(net), want, "rank " + std::to_string(comm.rank()));
  }));
}

TEST(DdpTest, ParameterUnusedOnSomeRanksCountsAsZeroAndNeverUsedStaysUndefined) {
  const int world = 3;
  const int64_t perRank = 2;
  const torch::Tensor inputs = globalInputs(perRank * world);
  // Reference: the branch's gradient is rank 0's alone, averaged over 3.
  torch::manual_seed(1);
  Net reference;
  torch::Tensor loss = torch::zeros({});
  for (int r = 0; r < world; ++r) {
    loss = loss + reference.forward(shard(inputs, r, perRank), r == 0).pow(2).mean() / world;
  }
  loss.backward();
  const std::vector<torch::Tensor> want = gradsOf(reference);
  ASSERT_FALSE(reference.unused->weight.grad().defined());
  expectNoErrors(runGlooThreads(world, [&](Communicator& comm) {
    std::shared_ptr<Net> owner = makeNet(comm.rank());
    Net& net = *owner;
    DistributedDataParallel ddp(net, comm);
    for (int step = 0; step < 2; ++step) {  // a second step must not hang either
      for (auto& p : net.parameters()) {
        if (p.grad().defined()) p.mutable_grad().zero_();
      }
      net.forward(shard(inputs, comm.rank(), perRank), comm.rank() == 0).pow(2).mean().backward();
    }
    expectClose(gradsOf(net), want, "rank " + std::to_string(comm.rank()));
  }));
}

// One bucket holds the parameters in reverse order, so with views each
// parameter's gradient starts where the next parameter's ends.
TEST(DdpTest, GradientsAreViewsIntoTheBucketFromTheFirstBackwardOn) {
  expectNoErrors(runGlooThreads(2, [](Communicator& comm) {
    Net net;
    DistributedDataParallel ddp(net, comm);
    torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(0.1));
    const std::vector<torch::Tensor> params = net.parameters();
    for (int step = 0; step < 2; ++step) {
      sgd.zero_grad();  // LibTorch's detach_() on every grad: no views refused
      net.forward(globalInputs(4), /*takeBranch=*/true).pow(2).mean().backward();
      for (size_t i = 0; i + 1 < params.size(); ++i) {
        if (!params[i + 1].grad().defined()) continue;  // `unused`
        const auto* next = static_cast<const char*>(params[i + 1].grad().data_ptr());
        EXPECT_EQ(params[i].grad().data_ptr(), next + params[i + 1].nbytes())
            << "rank " << comm.rank() << " step " << step << " param " << i;
      }
      sgd.step();
    }
  }));
}

// A gradient set to undefined (zero_grad with set_to_none) is accumulated
// anew by autograd; DDP must average that one and make it a view again.
TEST(DdpTest, GradientsSetToUndefinedBetweenStepsAreStillAveraged) {
  const int world = 2;
  const int64_t perRank = 3;
  const torch::Tensor inputs = globalInputs(perRank * world);
  const std::vector<torch::Tensor> want = referenceGradients(inputs);
  expectNoErrors(runGlooThreads(world, [&](Communicator& comm) {
    std::shared_ptr<Net> owner = makeNet(comm.rank());
    Net& net = *owner;
    DistributedDataParallel ddp(net, comm);
    for (int step = 0; step < 3; ++step) {
      for (auto& p : net.parameters()) p.mutable_grad() = torch::Tensor();
      net.forward(shard(inputs, comm.rank(), perRank)).pow(2).mean().backward();
      expectClose(gradsOf(net), want,
                  "rank " + std::to_string(comm.rank()) + " step " + std::to_string(step));
    }
  }));
}

// The all-reduce averages every slot of a bucket, also those of parameters
// nobody used this step; their grad() must come out as it went in, even
// where it differs from rank to rank.
TEST(DdpTest, GradientOfAParameterNobodyUsedKeepsItsValue) {
  expectNoErrors(runGlooThreads(3, [](Communicator& comm) {
    Net net;
    DistributedDataParallel ddp(net, comm);
    const torch::Tensor x = globalInputs(6).narrow(0, 2 * comm.rank(), 2);
    net.forward(x, /*takeBranch=*/true).pow(2).mean().backward();
    {
      torch::NoGradGuard noGrad;
      net.branch->weight.mutable_grad().fill_(comm.rank() + 1);  // in place: still the view
    }
    net.forward(x, /*takeBranch=*/false).pow(2).mean().backward();
    EXPECT_TRUE(net.branch->weight.grad().eq(comm.rank() + 1).all().item<bool>())
        << "rank " << comm.rank() << ": " << net.branch->weight.grad();
  }));
}

TEST(DdpTest, RanksWhoseModelsDifferAreRefusedWithTheTensorNamed) {
  std::vector<ExitCode> codes(3, ExitCode::kSuccess);
  const std::vector<std::string> errors = runGlooThreads(3, [&](Communicator& comm) {
    Net net(comm.rank() == 2 ? 32 : 16);
    try {
      DistributedDataParallel ddp(net, comm);
    } catch (const Error& e) {
      codes[static_cast<size_t>(comm.rank())] = e.exitCode();
      throw;
    }
  });
  EXPECT_EQ(errors[2],
            "DistributedDataParallel: rank 2's model differs from rank 0's: "
            "tensor 0 is 'fc1.weight Float [32, 8]' here but 'fc1.weight "
            "Float [16, 8]' on rank 0");
  for (int r : {0, 1}) {
    EXPECT_EQ(errors[static_cast<size_t>(r)],
              "DistributedDataParallel: rank 2's model differs from rank 0's "
              "(its error names the tensor); every rank must build the same model");
  }
  for (ExitCode c : codes) EXPECT_EQ(c, ExitCode::kConfig);
}

TEST(DdpTest, BucketsFollowReverseParameterOrderWithASmallFirstBucket) {
  expectNoErrors(runGlooThreads(1, [](Communicator& comm) {
    Net net(256);  // fc1.weight 8 KB, fc2.weight 3 KB, ...
    DistributedDataParallel ddp(net, comm,
                                {.bucketCapMb = 25, .firstBucketMb = 0.0029, .overlap = true});
    const std::vector<std::vector<std::string>> want = {
        {"unused.bias", "unused.weight", "branch.bias", "branch.weight"},
        {"fc2.bias", "fc2.weight", "fc1.bias", "fc1.weight"}};
    EXPECT_EQ(ddp.bucketParameterNames(), want);
  }));
}

// Registered head first, used last: reverse registration order is not the
// order backward produces the gradients.
struct HeadFirst : torch::nn::Module {
  HeadFirst()
      : head(register_module("head", torch::nn::Linear(16, 3))),
        body(register_module("body", torch::nn::Linear(8, 16))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return head->forward(torch::relu(body->forward(x)));
  }
  torch::nn::Linear head, body;
};

// As makeNet: rank 0 seeds the reference's weights, the others differ.
std::shared_ptr<HeadFirst> makeHeadFirst(int rank) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  torch::manual_seed(rank == 0 ? 1 : 7);
  return std::make_shared<HeadFirst>();
}

// `steps` SGD steps of one process on the union of the ranks' batches:
// the gradients of each step.
std::vector<std::vector<torch::Tensor>> headFirstReference(const torch::Tensor& inputs, int steps) {
  torch::manual_seed(1);
  HeadFirst net;
  torch::optim::SGD sgd(net.parameters(), 0.1);
  std::vector<std::vector<torch::Tensor>> out;
  for (int step = 0; step < steps; ++step) {
    sgd.zero_grad();
    net.forward(inputs).pow(2).mean().backward();
    out.emplace_back();
    for (const auto& p : net.parameters()) out.back().push_back(p.grad().clone());
    sgd.step();
  }
  return out;
}

TEST(DdpTest, BucketsAreRebuiltInTheOrderGradientsBecameReadyAfterTheFirstStep) {
  const int64_t perRank = 4;
  const int steps = 3;
  for (int world : {1, 3}) {
    for (bool views : {true, false}) {
      const torch::Tensor inputs = globalInputs(perRank * world);
      const auto want = headFirstReference(inputs, steps);
      expectNoErrors(runGlooThreads(world, [&](Communicator& comm) {
        std::shared_ptr<HeadFirst> owner = makeHeadFirst(comm.rank());
        HeadFirst& net = *owner;
        DistributedDataParallel ddp(net, comm,
                                    {.bucketCapMb = 1e-6,
                                     .firstBucketMb = 1e-6,
                                     .overlap = true,
                                     .gradientAsBucketView = views});
        const std::vector<std::vector<std::string>> registered = {
            {"body.bias"}, {"body.weight"}, {"head.bias"}, {"head.weight"}};
        EXPECT_EQ(ddp.bucketParameterNames(), registered);
        torch::optim::SGD sgd(net.parameters(), 0.1);
        const std::string where = "world " + std::to_string(world) + " rank " +
                                  std::to_string(comm.rank()) + (views ? " views" : " copies");
        for (int step = 0; step < steps; ++step) {
          sgd.zero_grad();
          net.forward(shard(inputs, comm.rank(), perRank)).pow(2).mean().backward();
          std::vector<torch::Tensor> got;
          for (const auto& p : net.parameters()) got.push_back(p.grad().clone());
          expectClose(got, want[static_cast<size_t>(step)],
                      where + " step " + std::to_string(step));
          sgd.step();
        }
        const auto rebuilt = ddp.bucketParameterNames();
        ASSERT_EQ(rebuilt.size(), 4u) << where;
        std::vector<std::string> order;
        for (const auto& bucket : rebuilt) order.push_back(bucket.at(0));
        const auto at = [&](const std::string& name) {
          return std::find(order.begin(), order.end(), name) - order.begin();
        };
        EXPECT_LT(std::max(at("head.weight"), at("head.bias")),
                  std::min(at("body.weight"), at("body.bias")))
            << where << ": " << fmt::format("{}", fmt::join(order, " "));
      }));
    }
  }
}

TEST(DdpTest, BucketsKeepTheirFirstLayoutWhenRebuildIsOff) {
  expectNoErrors(runGlooThreads(2, [](Communicator& comm) {
    std::shared_ptr<HeadFirst> owner = makeHeadFirst(comm.rank());
    DistributedDataParallel ddp(
        *owner, comm,
        {.bucketCapMb = 1e-6, .firstBucketMb = 1e-6, .overlap = true, .rebuildBuckets = false});
    const auto registered = ddp.bucketParameterNames();
    for (int step = 0; step < 2; ++step) {
      owner->forward(globalInputs(4)).pow(2).mean().backward();
    }
    EXPECT_EQ(ddp.bucketParameterNames(), registered);
  }));
}

// The message names the DdpOptions field (distrun-train names its
// --bucket-cap-mb flag itself: train_flags_test.cc).
std::string bucketSizeError(DdpOptions options) {
  std::string message = "no error";
  expectNoErrors(runGlooThreads(1, [&](Communicator& comm) {
    Net net;
    try {
      DistributedDataParallel ddp(net, comm, options);
    } catch (const UsageError& e) {
      EXPECT_EQ(e.exitCode(), ExitCode::kUsage);
      message = e.what();
    }
  }));
  return message;
}

TEST(DdpTest, NonPositiveBucketSizeIsAUsageErrorNamingTheOption) {
  EXPECT_EQ(bucketSizeError({.bucketCapMb = 0, .firstBucketMb = 1, .overlap = true}),
            "DdpOptions::bucketCapMb must be above 0 (MB), got 0");
  EXPECT_EQ(bucketSizeError({.bucketCapMb = 25, .firstBucketMb = -1, .overlap = true}),
            "DdpOptions::firstBucketMb must be above 0 (MB), got -1");
}

TEST(TensorCommTest, TypesTheCommunicatorCannotCarryAreNamed) {
  try {
    dataTypeOf(torch::kBool, "buffer mask");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "buffer mask has type Bool, which the communicator cannot carry: "
              "expected float32, float64, float16, bfloat16, int32 or int64");
  }
}

}  // namespace
}  // namespace distrun::train
