// PLACEHOLDER: replaced by its owner this round (runs checks one by one, no limit).
#include "distrun/doctor/check_runner.h"

namespace distrun::doctor {
std::vector<CheckResult> runChecks(const std::vector<Check>& checks,
                                   std::shared_ptr<const ProbeContext> ctx) {
  std::vector<CheckResult> results;
  for (const Check& check : checks) results.push_back(check.run(*ctx));
  return results;
}
}  // namespace distrun::doctor
