// NCCL loaded at run time: the real NCCL of this machine's toolkit, and the
// one-line errors where it is missing or is not NCCL. No GPU is needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "distrun/comm/gpu/testing/config_error.h"
#include "distrun/comm/nccl/nccl_library.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"

namespace distrun::comm::nccl {
namespace {

using gpu::testing::configErrorOf;
using ::testing::HasSubstr;

TEST(NcclLibraryTest, LoadsTheToolkitsNcclAndReadsTheVersionItsHeaderHas) {
  const MapEnvironment env{{"DISTRUN_NCCL_LIBRARY", DISTRUN_TEST_NCCL_LIBRARY}};
  const NcclLibrary& nccl = loadNccl(env, gpu::GpuVendor::kNvidia);
  EXPECT_EQ(nccl.library, DISTRUN_TEST_NCCL_LIBRARY);
  EXPECT_EQ(nccl.version, NCCL_VERSION_CODE);
  EXPECT_EQ(nccl.versionText(), std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) +
                                    "." + std::to_string(NCCL_PATCH));
  EXPECT_THAT(nccl.describe(ncclRemoteError, nullptr), HasSubstr("ncclRemoteError: "));
  // Loaded once a process: the second call gives the same table.
  EXPECT_EQ(&loadNccl(env, gpu::GpuVendor::kNvidia), &nccl);
}

TEST(NcclLibraryTest, AMissingNcclIsOneLineNamingTheFileAndHowToGiveIt) {
  const std::string message = configErrorOf([] {
    loadNccl(MapEnvironment{{"DISTRUN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}},
             gpu::GpuVendor::kNvidia);
  });
  EXPECT_THAT(message, HasSubstr("NCCL (for the nccl backend) could not be loaded (tried "
                                 "/nonexistent/libnccl.so.2: "));
  EXPECT_THAT(message, HasSubstr("set DISTRUN_NCCL_LIBRARY to its path"));
}

TEST(NcclLibraryTest, RcclIsLookedForUnderItsOwnNames) {
  const std::string message =
      configErrorOf([] { loadNccl(MapEnvironment{}, gpu::GpuVendor::kAmd); });
  if (message.empty()) GTEST_SKIP() << "RCCL is installed here";
  EXPECT_THAT(message, HasSubstr("RCCL (for the rccl backend) could not be loaded (tried "
                                 "librccl.so.1, librccl.so: "));
  EXPECT_THAT(message, HasSubstr("module load rocm"));
}

TEST(NcclLibraryTest, ALibraryThatIsNotNcclIsNamedWithTheCallItLacks) {
  const std::string message = configErrorOf([] {
    loadNccl(MapEnvironment{{"DISTRUN_NCCL_LIBRARY", "libm.so.6"}}, gpu::GpuVendor::kNvidia);
  });
  EXPECT_EQ(message, "libm.so.6 has no ncclGetVersion (an older or a different library?)");
}

TEST(NcclLibraryTest, EveryTypeAndReductionHasItsNcclTwinAndAvgIsNcclsOwn) {
  const std::map<DataType, ncclDataType_t> expected = {
      {DataType::kFloat32, ncclFloat32}, {DataType::kFloat64, ncclFloat64},
      {DataType::kFloat16, ncclFloat16}, {DataType::kBFloat16, ncclBfloat16},
      {DataType::kInt32, ncclInt32},     {DataType::kInt64, ncclInt64}};
  for (DataType type : kAllDataTypes) EXPECT_EQ(toNccl(type), expected.at(type)) << nameOf(type);
  EXPECT_EQ(toNccl(ReduceOp::kSum), ncclSum);
  EXPECT_EQ(toNccl(ReduceOp::kProd), ncclProd);
  EXPECT_EQ(toNccl(ReduceOp::kMin), ncclMin);
  EXPECT_EQ(toNccl(ReduceOp::kMax), ncclMax);
  EXPECT_EQ(toNccl(ReduceOp::kAvg), ncclAvg);
}

}  // namespace
}  // namespace distrun::comm::nccl
