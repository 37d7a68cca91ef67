#pragma once

#include <cstdint>

#include "distrun/common/status_record.h"

namespace distrun::train {

// Where a rank stands after a training step, for its status record
// (docs/launcher.md, "Status records"). A plain value.
struct StepStatus {
  int64_t epoch = 0;  // 0-based
  int64_t epochs = 0;
  int64_t step = 0;        // steps done in this epoch
  int64_t steps = 0;       // in this epoch
  double lossSum = 0;      // this rank's running loss sum over the epoch ...
  double lossSamples = 0;  // ... and the samples it was summed over
  int64_t samples = 0;     // this rank's samples since the epoch (or its resume) began
  int worldSize = 1;
  double seconds = 0;  // since then
};

// The record of `s`: 1-based epoch, the running mean loss, and the job's
// samples per second estimated as this rank's times the world size.
StatusRecord stepRecord(const StepStatus& s);

// Writes stepRecord(s) on DISTRUN_PROGRESS_FD (reportStatus): at most 10
// records a second, and always the epoch's last step. Nothing without one.
void reportStep(const StepStatus& s);

}  // namespace distrun::train
