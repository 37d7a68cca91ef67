#include "distrun/train/step_status.h"

#include <algorithm>

namespace distrun::train {

StatusRecord stepRecord(const StepStatus& s) {
  StatusRecord r;
  r.epoch = s.epoch + 1;
  r.epochs = s.epochs;
  r.step = s.step;
  r.steps = s.steps;
  if (s.lossSamples > 0) r.loss = s.lossSum / s.lossSamples;
  if (s.seconds > 0) {
    r.samplesPerSecond = static_cast<double>(s.samples) * s.worldSize / s.seconds;
  }
  return r;
}

void reportStep(const StepStatus& s) { reportStatus(stepRecord(s), s.step == s.steps); }

}  // namespace distrun::train
