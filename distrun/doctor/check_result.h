#pragma once

#include <map>
#include <string>
#include <vector>

namespace distrun::doctor {

// A check's verdict on one node, in order of severity: skip (the check does
// not apply here, and says why), ok, warn (training will run, but worse
// than it could), fail (training will not run, or will hang or crash).
enum class CheckState { kSkip, kOk, kWarn, kFail };

// "skip", "ok", "warn", "fail".
std::string stateName(CheckState state);
// The inverse of stateName; ConfigError naming `text` otherwise.
CheckState parseState(const std::string& text);

// What one check found on one node. A plain value; copyable.
struct CheckResult {
  std::string check;  // the check's name, as --checks takes it ("tmpdir")
  CheckState state = CheckState::kOk;
  // One line, what was found, without the node's name: "$TMPDIR /tmp has
  // 3 MiB free; at least 1 GiB wanted". For skip: the reason.
  std::string detail;
  // One line for warn and fail: what to do about it ("export TMPDIR=...").
  std::string fix;
  // Figures measured, by name with the unit in it: "free_bytes",
  // "skew_ms", "busbw_gbps", "matmul_ms". In --format json.
  std::map<std::string, double> values;
  // Facts found that are words, not figures: "torch_version": "2.1.2",
  // "interface": "hsn0". In --format json.
  std::map<std::string, std::string> facts;
  double seconds = 0;  // how long the check ran
};

// One node's answers: every check it ran, in the order of the checks.
struct NodeReport {
  std::string node;  // the scheduler's name for it (SLURMD_NODENAME, hostname)
  std::vector<CheckResult> results;
  // The result of `check`, or nullptr when the node did not run it.
  const CheckResult* find(const std::string& check) const;
  CheckResult* find(const std::string& check);
};

// The whole job's answers, node order as the scheduler numbers nodes.
// A node that never answered has one result, check "answer", state fail.
struct DoctorReport {
  std::vector<NodeReport> nodes;
  // The checks in the order they ran and print (names), every node's
  // results among them.
  std::vector<std::string> checks;
  double seconds = 0;  // the whole doctor run, wall clock
};

// The worst state of any result of the report (kSkip for an empty report).
CheckState worstState(const DoctorReport& report);

}  // namespace distrun::doctor
