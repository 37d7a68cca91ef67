#include "distrun/doctor/job_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "distrun/doctor/checks.h"
#include "distrun/doctor/matmul_check.h"

namespace distrun::doctor {
namespace {

constexpr const char* kStraggler = "straggler";
constexpr const char* kTorchVersion = "torch-version";

// Adds `check` to every node, `resultOf` giving each node's result (a
// result of that name already there is replaced), and to report.checks.
template <typename ResultOf>
void addToEveryNode(DoctorReport& report, const std::string& check, ResultOf resultOf) {
  if (std::find(report.checks.begin(), report.checks.end(), check) == report.checks.end()) {
    report.checks.push_back(check);
  }
  for (NodeReport& node : report.nodes) {
    CheckResult result = resultOf(static_cast<const NodeReport&>(node));
    if (CheckResult* old = node.find(check))
      *old = std::move(result);
    else
      node.results.push_back(std::move(result));
  }
}

std::optional<double> matmulMs(const NodeReport& node) {
  const CheckResult* r = node.find("matmul");
  if (r == nullptr) return std::nullopt;
  auto it = r->values.find("matmul_ms");
  return it == r->values.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<std::string> torchVersion(const NodeReport& node) {
  const CheckResult* r = node.find("python");
  if (r == nullptr) return std::nullopt;
  auto it = r->facts.find("torch_version");
  return it == r->facts.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// The nodes' timings against their median.
struct Timings {
  size_t measured = 0;
  double median = 0;
  double margin = 0;
};

CheckResult stragglerResult(const NodeReport& node, const Timings& t) {
  if (t.measured == 0) return skip(kStraggler, "no node timed the matrix product (matmul)");
  if (t.measured == 1)
    return skip(kStraggler, "one node timed the matrix product: none to compare");
  const std::optional<double> ms = matmulMs(node);
  if (!ms) return skip(kStraggler, "this node did not time the matrix product (see matmul)");
  CheckResult result;
  if (*ms > t.median * (1 + t.margin)) {
    result = fail(kStraggler,
                  fmt::format("matrix product {:.1f} ms, {:.1f}x the median {:.1f} ms of {} nodes",
                              *ms, *ms / t.median, t.median, t.measured),
                  "something else runs on this node's cores (top, ps), or the node is throttled: "
                  "report it to the admins or exclude it (sbatch --exclude=NODE)");
  } else {
    result = ok(kStraggler, fmt::format("within {:g} % of the median {:.1f} ms of {} nodes",
                                        t.margin * 100, t.median, t.measured));
  }
  result.values["matmul_ms"] = *ms;
  result.values["median_ms"] = t.median;
  return result;
}

// How many nodes run each torch version, and the most common one (of
// equals, the first in node order).
struct Versions {
  std::map<std::string, size_t> count;
  std::string common;
  size_t reported = 0;  // nodes with a version
  size_t nodes = 0;     // nodes in the report
};

Versions countVersions(const DoctorReport& report) {
  Versions v;
  v.nodes = report.nodes.size();
  for (const NodeReport& node : report.nodes) {
    if (std::optional<std::string> version = torchVersion(node)) {
      ++v.reported;
      const size_t n = ++v.count[*version];
      if (v.common.empty() || n > v.count.at(v.common)) v.common = *version;
    }
  }
  return v;
}

CheckResult commonVersion(const Versions& v) {
  const std::string& common = v.common;
  const size_t n = v.count.at(common);
  if (n == v.nodes) return ok(kTorchVersion, fmt::format("torch {} on all {} nodes", common, n));
  if (n == v.reported) {
    return ok(kTorchVersion, fmt::format("torch {} on all {} nodes that imported it", common, n));
  }
  return ok(kTorchVersion, fmt::format("torch {}, as on {} of {} nodes", common, n, v.reported));
}

CheckResult versionResult(const NodeReport& node, const Versions& v) {
  if (v.reported == 0) return skip(kTorchVersion, "no node imported torch (see python)");
  if (v.nodes == 1) return skip(kTorchVersion, "one node: none to compare");
  const std::optional<std::string> version = torchVersion(node);
  if (!version) return skip(kTorchVersion, "this node did not import torch (see python)");
  CheckResult result =
      *version == v.common
          ? commonVersion(v)
          : fail(kTorchVersion,
                 fmt::format("torch {}, but {} on {} of {} nodes", *version, v.common,
                             v.count.at(v.common), v.reported),
                 "install the same PyTorch on every node, or run one image on all: "
                 "--container IMAGE");
  result.facts["torch_version"] = *version;
  return result;
}

}  // namespace

void flagStragglers(DoctorReport& report, double margin) {
  std::vector<double> times;
  for (const NodeReport& node : report.nodes) {
    if (std::optional<double> ms = matmulMs(node)) times.push_back(*ms);
  }
  const Timings timings{times.size(), times.empty() ? 0 : medianOf(times), margin};
  addToEveryNode(report, kStraggler,
                 [&](const NodeReport& node) { return stragglerResult(node, timings); });
}

void compareTorchVersions(DoctorReport& report) {
  const Versions versions = countVersions(report);
  addToEveryNode(report, kTorchVersion,
                 [&](const NodeReport& node) { return versionResult(node, versions); });
}

}  // namespace distrun::doctor
