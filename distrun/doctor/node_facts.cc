#include "distrun/doctor/node_facts.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

std::optional<binding::CpuList> readCpuListFile(const std::string& path) {
  std::optional<std::string> text = readFileIfPresent(path);
  if (!text) return std::nullopt;
  try {
    return binding::parseCpuList(trim(*text), path);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

int rank(CheckState state) { return static_cast<int>(state); }

}  // namespace

std::string formatBytes(uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < kKiB) return fmt::format("{} B", bytes);
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string counted(uint64_t count, const std::string& noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

CheckResult combine(const std::string& check, const std::vector<Finding>& findings) {
  std::vector<Finding> sorted = findings;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Finding& a, const Finding& b) {
    return rank(a.state) > rank(b.state);
  });
  CheckState worst = sorted.empty() ? CheckState::kOk : sorted.front().state;
  if (worst == CheckState::kSkip) worst = CheckState::kOk;
  std::vector<std::string> details, fixes;
  for (const Finding& f : sorted) {
    bool problem = f.state == CheckState::kWarn || f.state == CheckState::kFail;
    if (problem || rank(worst) <= rank(CheckState::kOk)) details.push_back(f.detail);
    if (problem && !f.fix.empty() && std::find(fixes.begin(), fixes.end(), f.fix) == fixes.end()) {
      fixes.push_back(f.fix);
    }
  }
  CheckResult result = ok(check, join(details, "; "));
  result.state = worst;
  result.fix = join(fixes, "; ");
  return result;
}

RanksPerNode ranksPerNode(const DoctorOptions& options, const cluster::JobLayout& layout,
                          int gpus) {
  if (options.nprocPerNode && *options.nprocPerNode > 0) {
    return {*options.nprocPerNode, "--nproc-per-node"};
  }
  if (layout.localWorldSize > 1) return {layout.localWorldSize, "tasks on this node"};
  if (gpus > 0) return {gpus, "GPUs"};
  return {1, "default"};
}

CpuFacts readCpuFacts(const std::string& root) {
  CpuFacts facts;
  const std::string base = root + "/sys/devices/system/cpu";
  facts.online = readCpuListFile(base + "/online").value_or(binding::CpuList{});
  for (int cpu : facts.online) {
    std::optional<binding::CpuList> siblings =
        readCpuListFile(fmt::format("{}/cpu{}/topology/thread_siblings_list", base, cpu));
    int first = siblings && !siblings->empty() ? siblings->front() : cpu;
    facts.coreOf.emplace_back(cpu, std::min(first, cpu));
  }
  return facts;
}

binding::CpuList coresOf(const binding::CpuList& cpus, const CpuFacts& facts) {
  binding::CpuList cores;
  for (int cpu : cpus) {
    auto it = std::lower_bound(facts.coreOf.begin(), facts.coreOf.end(), std::make_pair(cpu, -1));
    cores.push_back(it != facts.coreOf.end() && it->first == cpu ? it->second : cpu);
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

std::string firstLine(const std::string& text) {
  std::string_view trimmed = trim(text);
  return std::string(trim(trimmed.substr(0, trimmed.find('\n'))));
}

}  // namespace distrun::doctor
