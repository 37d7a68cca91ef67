#include "distrun/train/step_status.h"

#include <gtest/gtest.h>

namespace distrun::train {
namespace {

TEST(StepStatusTest, TheRecordOfAStep) {
  StepStatus s{.epoch = 1,
               .epochs = 3,
               .step = 40,
               .steps = 100,
               .lossSum = 12.5,
               .lossSamples = 50,
               .samples = 1280,
               .worldSize = 2,
               .seconds = 4};
  EXPECT_EQ(formatStatusRecord(stepRecord(s)),
            "status epoch=2 epochs=3 step=40 steps=100 loss=0.25 samples_per_s=640\n");
}

TEST(StepStatusTest, NoLossOrRateBeforeTheyCanBeMeasured) {
  StatusRecord r = stepRecord(StepStatus{.epoch = 0, .epochs = 1, .step = 1, .steps = 9});
  EXPECT_EQ(r.loss, std::nullopt);
  EXPECT_EQ(r.samplesPerSecond, std::nullopt);
  EXPECT_EQ(r.epoch, 1);
}

}  // namespace
}  // namespace distrun::train
