#include "distrun/models/mnist_cnn.h"

#include <gtest/gtest.h>

namespace distrun::models {
namespace {

TEST(MnistCnnTest, HasTheExampleNetworksLayersAndParameterCount) {
  MnistCnn net;
  int64_t count = 0;
  std::vector<std::string> names;
  for (const auto& p : net->named_parameters()) {
    count += p.value().numel();
    names.push_back(p.key());
  }
  // conv1 32*9+32, conv2 64*32*9+64, fc1 9216*128+128, fc2 128*10+10
  EXPECT_EQ(count, 320 + 18496 + 1179776 + 1290);
  EXPECT_EQ(names,
            (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                      "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
}

TEST(MnistCnnTest, GivesLogProbabilitiesOfTenClasses) {
  MnistCnn net;
  net->eval();
  torch::Tensor out = net->forward(torch::rand({3, 1, 28, 28}));
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, 10}));
  EXPECT_TRUE(torch::allclose(out.exp().sum(1), torch::ones({3})));
}

}  // namespace
}  // namespace distrun::models
