// DistributedSampler and the synthetic dataset against Debian's PyTorch,
// index for index and bit for bit (label: python). Skips with the reason
// when /usr/bin/python3 or its torch module is missing.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/common/unique_fd.h"
#include "distrun/data/synthetic.h"
#include "distrun/testing/tree_paths.h"
#include "distrun/train/sampler.h"

namespace distrun::train {
namespace {

using nlohmann::json;

constexpr const char* kPython = "/usr/bin/python3";

struct Run {
  int exitCode = -1;
  std::string output;  // stdout and stderr together
};

Run runShell(const std::string& command) {
  Run run;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, std::string("popen: ") + strerror(errno)};
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) {
    run.output.append(buffer, got);
  }
  int status = pclose(pipe);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return run;
}

// What sampler_reference.py wrote, or why there is nothing to compare with.
struct Reference {
  std::optional<json> data;
  std::string skipReason;
  std::string failure;
};

Reference runReference() {
  if (access(kPython, X_OK) != 0) {
    return {std::nullopt, std::string(kPython) + " is not installed", ""};
  }
  Run probe = runShell(std::string(kPython) + " -c 'import torch'");
  if (probe.exitCode != 0) {
    return {std::nullopt, "python3 cannot import torch: " + probe.output, ""};
  }
  char path[] = "/tmp/distrun-sampler-reference-XXXXXX";
  if (!UniqueFd(mkstemp(path))) return {std::nullopt, "", std::string("mkstemp failed")};
  Run run = runShell(std::string(kPython) + " " + DISTRUN_SOURCE_DIR +
                     "/distrun/train/testdata/sampler_reference.py " + path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  if (run.exitCode != 0) {
    return {std::nullopt, "", "sampler_reference.py failed: " + run.output};
  }
  return {json::parse(text.str()), "", ""};
}

// PyTorch runs once for the whole binary.
const Reference& reference() {
  static const Reference result = runReference();
  return result;
}

class PythonReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!reference().skipReason.empty()) GTEST_SKIP() << reference().skipReason;
    ASSERT_TRUE(reference().data) << reference().failure;
  }
  const json& pytorch() const { return *reference().data; }
};

TEST_F(PythonReferenceTest, SamplerMatchesPyTorchIndexForIndex) {
  const json& cases = pytorch()["samplers"];
  // 7 sizes × 15 (world, rank) pairs × 2 seeds × 3 epochs × 2 × 2 flags.
  ASSERT_EQ(cases.size(), 2520u);
  int mismatches = 0;
  for (const json& c : cases) {
    DistributedSampler sampler({.datasetSize = c["size"].get<int64_t>(),
                                .worldSize = c["world"].get<int>(),
                                .rank = c["rank"].get<int>(),
                                .shuffle = c["shuffle"].get<bool>(),
                                .seed = c["seed"].get<uint64_t>(),
                                .dropLast = c["drop_last"].get<bool>()});
    sampler.setEpoch(c["epoch"].get<int64_t>());
    auto expected = c["indices"].get<std::vector<int64_t>>();
    EXPECT_EQ(sampler.numSamples(), static_cast<int64_t>(expected.size()));
    if (sampler.indices() != expected && ++mismatches <= 5) {
      ADD_FAILURE() << "indices differ from PyTorch's for " << c.dump(-1).substr(0, 200);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

std::vector<int32_t> bitsOf(const at::Tensor& t) {
  at::Tensor flat = t.contiguous().view(at::kInt).flatten();
  return {flat.data_ptr<int32_t>(), flat.data_ptr<int32_t>() + flat.numel()};
}

TEST_F(PythonReferenceTest, SyntheticDatasetMatchesPyTorchBitForBit) {
  const json& sets = pytorch()["synthetic"];
  ASSERT_EQ(sets.size(), 2u);
  for (const json& set : sets) {
    uint64_t seed = set["seed"].get<uint64_t>();
    data::RegressionData mine = data::makeSyntheticRegression(set["size"].get<int64_t>(), seed);
    EXPECT_EQ(bitsOf(mine.inputs), set["inputs"].get<std::vector<int32_t>>()) << "seed " << seed;
    EXPECT_EQ(bitsOf(mine.targets), set["targets"].get<std::vector<int32_t>>()) << "seed " << seed;
  }
}

}  // namespace
}  // namespace distrun::train
