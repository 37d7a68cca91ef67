#include "distrun/doctor/check_result.h"

#include <algorithm>
#include <utility>

#include "distrun/common/error.h"

namespace distrun::doctor {

std::string stateName(CheckState state) {
  switch (state) {
    case CheckState::kSkip:
      return "skip";
    case CheckState::kOk:
      return "ok";
    case CheckState::kWarn:
      return "warn";
    case CheckState::kFail:
      return "fail";
  }
  return "fail";
}

CheckState parseState(const std::string& text) {
  for (CheckState s : {CheckState::kSkip, CheckState::kOk, CheckState::kWarn, CheckState::kFail}) {
    if (stateName(s) == text) return s;
  }
  throw ConfigError("check state '" + text + "' is not one of skip, ok, warn, fail");
}

const CheckResult* NodeReport::find(const std::string& check) const {
  auto it = std::find_if(results.begin(), results.end(),
                         [&](const CheckResult& r) { return r.check == check; });
  return it == results.end() ? nullptr : &*it;
}

CheckResult* NodeReport::find(const std::string& check) {
  return const_cast<CheckResult*>(std::as_const(*this).find(check));
}

CheckState worstState(const DoctorReport& report) {
  CheckState worst = CheckState::kSkip;
  for (const NodeReport& node : report.nodes) {
    for (const CheckResult& r : node.results) worst = std::max(worst, r.state);
  }
  return worst;
}

}  // namespace distrun::doctor
