#include "distrun/train_app/blas_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun::train {
namespace {

using ::testing::HasSubstr;

TEST(BlasCheckTest, ReferenceBlasIsNamedWithTheFix) {
  const std::optional<std::string> warning =
      slowBlasWarning("/nonexistent/x86_64-linux-gnu/blas/libblas.so.3");
  ASSERT_TRUE(warning.has_value());
  EXPECT_EQ(*warning,
            "distrun-train: warning: LibTorch's BLAS is /nonexistent/x86_64-linux-gnu/blas/"
            "libblas.so.3, a reference implementation: matrix products run ~20x slower "
            "(install libopenblas0-openmp: scripts/install-deps)");
}

TEST(BlasCheckTest, OptimisedOrUnknownLibrariesPass) {
  EXPECT_EQ(slowBlasWarning("/nonexistent/openblas-openmp/libblas.so.3"), std::nullopt);
  EXPECT_EQ(slowBlasWarning("/nonexistent/blis-openmp/libblas.so.3"), std::nullopt);
  EXPECT_EQ(slowBlasWarning("/opt/intel/oneapi/mkl/lib/libmkl_rt.so.2"), std::nullopt);
  EXPECT_EQ(slowBlasWarning("/usr/lib/libtorch_cpu.so"), std::nullopt);  // a BLAS built in
}

TEST(BlasCheckTest, ThisProcessFindsTheLibraryLibTorchUses) {
  const std::optional<std::string> path = blasLibraryPath();
  ASSERT_TRUE(path.has_value()) << "no sgemm_ in this process (LibTorch links a BLAS)";
  EXPECT_THAT(*path, HasSubstr(".so"));
}

}  // namespace
}  // namespace distrun::train
