// The report in LBNL Node Health Check's words, for Slurm's
// HealthCheckProgram and for an admin who drains the failing nodes.
#include <ostream>
#include <string>

#include "distrun/common/strings.h"
#include "distrun/doctor/report_format.h"

namespace distrun::doctor {
namespace {

// `text` inside double quotes for sh: \ " $ and ` escaped.
std::string doubleQuoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out + "\"";
}

// What NHC says and what the drain reason says: "CHECK: DETAIL".
std::string problem(const CheckResult& r) { return r.check + ": " + oneLine(r.detail); }

void writeNode(std::ostream& out, const NodeReport& node) {
  const CheckResult* first = nullptr;
  for (const CheckResult& r : node.results) {
    if (r.state != CheckState::kFail) continue;
    out << "ERROR:  nhc:  Health check failed:  " << oneLine(node.node) << ": " << problem(r)
        << "\n";
    if (first == nullptr) first = &r;
  }
  if (first == nullptr) return;
  out << "scontrol update NodeName=" << shellQuote(oneLine(node.node))
      << " State=DRAIN Reason=" << doubleQuoted("NHC: distrun doctor: " + problem(*first)) << "\n";
}

}  // namespace

void writeNhc(std::ostream& out, const DoctorReport& report) {
  for (const NodeReport& node : report.nodes) writeNode(out, node);
}

}  // namespace distrun::doctor
