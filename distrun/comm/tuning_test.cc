#include "distrun/comm/tuning.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::comm {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

bool sameTuning(const CommTuning& a, const CommTuning& b) {
  return a.gloo == b.gloo && a.timeout == b.timeout && a.instructions == b.instructions &&
         a.mpiThreads == b.mpiThreads;
}

// A value each row takes and that is not its default.
std::string valueFor(const TuningVariable& variable) {
  const std::string takes = variable.takes;
  if (takes == "bytes") return "12345";
  if (takes == "seconds") return "17";
  if (takes == "0 or 1") return "0";
  if (takes == "1, 0 or auto") return "1";
  if (takes.starts_with("auto, baseline")) return "baseline";
  if (takes.starts_with("serialized")) return "single";
  ADD_FAILURE() << variable.name << " takes '" << takes << "', which this test does not know";
  return "";
}

CommTuning tuningWith(const char* name, const std::string& value) {
  return readTuning(MapEnvironment{{name, value}});
}

TEST(TuningTest, UnsetVariablesLeaveEveryDefault) {
  EXPECT_TRUE(sameTuning(readTuning(MapEnvironment{}), CommTuning{}));
}

// Each variable changes the tuning, and no two change the same thing: the
// tuning one variable gives differs from every other's.
TEST(TuningTest, EachVariableSetsSomethingOfItsOwn) {
  const auto variables = tuningVariables();
  std::set<std::string> names;
  for (const TuningVariable& variable : variables) {
    EXPECT_TRUE(names.insert(variable.name).second) << variable.name << " twice";
    EXPECT_THAT(variable.name,
                ::testing::AnyOf(StartsWith("DISTRUN_COMM_"), StartsWith("DISTRUN_GLOO_")));
    const CommTuning set = tuningWith(variable.name, valueFor(variable));
    EXPECT_FALSE(sameTuning(set, CommTuning{})) << variable.name << " changed nothing";
    for (const TuningVariable& other : variables) {
      if (&other == &variable) continue;
      EXPECT_FALSE(sameTuning(set, tuningWith(other.name, valueFor(other))))
          << variable.name << " and " << other.name << " set the same thing";
    }
  }
  EXPECT_EQ(variables.size(), 19u);
}

TEST(TuningTest, SetsWhatEachKindOfVariableSays) {
  EXPECT_EQ(tuningWith("DISTRUN_GLOO_BCUBE_BELOW", "65536").gloo.bcubeBelowBytes, 65536u);
  EXPECT_FALSE(tuningWith("DISTRUN_COMM_SHM", "0").gloo.sharedMemory);
  EXPECT_TRUE(tuningWith("DISTRUN_COMM_SHM", "1").gloo.sharedMemory);
  EXPECT_EQ(tuningWith("DISTRUN_COMM_SPIN", "0").gloo.spinWhileWaiting, GlooOptions::Spin::kNever);
  EXPECT_EQ(tuningWith("DISTRUN_COMM_TIMEOUT", "30").timeout, std::chrono::seconds(30));
  EXPECT_EQ(tuningWith("DISTRUN_COMM_SIMD", "avx2").instructions, Instructions::kAvx2);
  EXPECT_EQ(tuningWith("DISTRUN_COMM_SIMD", "auto").instructions, std::nullopt);
  EXPECT_EQ(tuningWith("DISTRUN_COMM_MPI_THREADS", "funneled").mpiThreads, MpiThreads::kFunneled);
}

// A value that is not what the variable takes: ConfigError (78) naming the
// variable, the value and what it takes.
TEST(TuningTest, AValueOfTheWrongKindNamesTheVariable) {
  for (const TuningVariable& variable : tuningVariables()) {
    try {
      tuningWith(variable.name, "lots");
      ADD_FAILURE() << variable.name << " took 'lots'";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), StartsWith(std::string(variable.name) + "='lots' is not "));
      EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
    }
  }
  try {
    tuningWith("DISTRUN_COMM_SIMD", "sse9");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "DISTRUN_COMM_SIMD='sse9' is not one of: auto, baseline, avx2, avx512");
  }
}

// docs/comm.md's table of tuning variables names every one, with what it takes.
TEST(TuningTest, TheDocsListEveryVariable) {
  std::ifstream file(std::string(DISTRUN_SOURCE_DIR) + "/docs/comm.md");
  ASSERT_TRUE(file) << "docs/comm.md";
  std::stringstream text;
  text << file.rdbuf();
  for (const TuningVariable& variable : tuningVariables()) {
    EXPECT_THAT(text.str(), HasSubstr(std::string("`") + variable.name + "`")) << variable.name;
  }
}

}  // namespace
}  // namespace distrun::comm
