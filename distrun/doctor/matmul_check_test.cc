#include "distrun/doctor/matmul_check.h"

#include <gtest/gtest.h>

#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

// The fastest run: a run slowed by another process for a moment (90.0) is
// not the node's speed.
TEST(MatmulCheckTest, ReportsTheFastestTime) {
  CheckResult r = matmulVerdict({50.0, 40.0, 41.2, 42.0, 90.0}, std::nullopt);
  EXPECT_EQ(r.check, "matmul");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "512x512 float matrix product: 40.0 ms (best of 5)");
  EXPECT_EQ(r.values.at("matmul_ms"), 40.0);
}

TEST(MatmulCheckTest, AWrongProductFails) {
  CheckResult r = matmulVerdict({40.0}, size_t{3});
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "the 512x512 float matrix product came out wrong (entry 3,3)");
  EXPECT_EQ(r.fix,
            "this node's CPU or memory computes wrongly: report it to the admins and exclude it "
            "(sbatch --exclude=NODE)");
}

TEST(MatmulCheckTest, TheMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_EQ(medianOf({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(medianOf({7.0}), 7.0);
}

TEST(MatmulCheckTest, TimesARealProductOnThisCore) {
  CheckResult r = checkMatmul(ProbeContext{});
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail.rfind("512x512 float matrix product: ", 0), 0u) << r.detail;
  EXPECT_GT(r.values.at("matmul_ms"), 0.0);
}

}  // namespace
}  // namespace distrun::doctor
