#include "distrun/binding/cpu_list.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::binding {
namespace {

constexpr int kMaxCpu = 65535;

int parseCpu(std::string_view text, std::string_view list, const std::string& what) {
  int value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > kMaxCpu) {
    throw ConfigError(
        fmt::format("{} '{}' is not a CPU list: expected numbers and ranges such "
                    "as 0-7,16 (CPU numbers 0 to {})",
                    what, list, kMaxCpu));
  }
  return value;
}

void addRange(std::string_view item, std::string_view list, const std::string& what,
              CpuList& cpus) {
  size_t dash = item.find('-');
  int first = parseCpu(item.substr(0, dash), list, what);
  int last = dash == std::string_view::npos ? first : parseCpu(item.substr(dash + 1), list, what);
  if (last < first) {
    throw ConfigError(
        fmt::format("{} '{}' is not a CPU list: the range {} runs backwards", what, list, item));
  }
  for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
}

}  // namespace

CpuList parseCpuList(std::string_view text, const std::string& what) {
  CpuList cpus;
  for (const std::string& item : split(text, ',')) addRange(item, text, what, cpus);
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string formatCpuList(const CpuList& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::string cpuMask(const CpuList& cpus) {
  if (cpus.empty()) return "0x0";
  std::string digits(static_cast<size_t>(cpus.back() / 4 + 1), '0');
  for (int cpu : cpus) {
    char& digit = digits[digits.size() - 1 - static_cast<size_t>(cpu / 4)];
    int value = (digit <= '9' ? digit - '0' : digit - 'a' + 10) | (1 << (cpu % 4));
    digit = "0123456789abcdef"[value];
  }
  return "0x" + digits;
}

CpuList without(const CpuList& cpus, const CpuList& removed) {
  CpuList kept;
  std::set_difference(cpus.begin(), cpus.end(), removed.begin(), removed.end(),
                      std::back_inserter(kept));
  return kept;
}

CpuList onlyWithin(const CpuList& cpus, const CpuList& allowed) {
  CpuList kept;
  std::set_intersection(cpus.begin(), cpus.end(), allowed.begin(), allowed.end(),
                        std::back_inserter(kept));
  return kept;
}

}  // namespace distrun::binding
