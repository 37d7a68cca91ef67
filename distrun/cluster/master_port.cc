#include "distrun/cluster/master_port.h"

#include <cstdint>

#include "distrun/common/strings.h"

namespace distrun::cluster {

namespace {

// The leading decimal number of an id ("1234" -> 1234, "1234.pbs01" ->
// 1234, "1234_7" -> 1234), or its hash when it does not start with a digit.
uint64_t idNumber(const std::string& id) {
  uint64_t value = 0;
  size_t digits = 0;
  for (; digits < id.size() && digits < 18; ++digits) {
    char c = id[digits];
    if (c < '0' || c > '9') break;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return digits > 0 ? value : fnv1a(id);
}

uint64_t stepNumber(const std::string& step) {
  if (step.empty()) return 0;
  if (step == "batch") return 63;
  if (step == "interactive") return 62;
  return idNumber(step) % 64;
}

}  // namespace

int derivedMasterPort(const std::string& jobId, const std::string& stepId) {
  uint64_t slot = (idNumber(jobId) % kDerivedPortCount) * 64 + stepNumber(stepId);
  return kFirstDerivedPort + static_cast<int>(slot % kDerivedPortCount);
}

}  // namespace distrun::cluster
