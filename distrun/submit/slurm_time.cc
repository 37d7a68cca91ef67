#include "distrun/submit/slurm_time.h"

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::submit {
namespace {

[[noreturn]] void badTime(std::string_view text, const std::string& flag) {
  throw UsageError(fmt::format(
      "{} '{}': expected Slurm's MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, "
      "DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (e.g. 90, 1:30:00, 2-00)",
      flag, text));
}

std::vector<long> numbers(std::string_view text, std::string_view whole, const std::string& flag) {
  std::vector<long> out;
  for (const std::string& part : split(text, ':')) {
    try {
      out.push_back(static_cast<long>(parseCount(part, flag, 1'000'000)));
    } catch (const ConfigError&) {
      badTime(whole, flag);
    }
  }
  return out;
}

// Without days: M, M:S, H:M:S.
long clockSeconds(const std::vector<long>& n) {
  if (n.size() == 1) return n[0] * 60;
  if (n.size() == 2) return n[0] * 60 + n[1];
  return n[0] * 3600 + n[1] * 60 + n[2];
}

// After "D-": H, H:M, H:M:S.
long hourSeconds(const std::vector<long>& n) {
  long seconds = n[0] * 3600;
  if (n.size() > 1) seconds += n[1] * 60;
  if (n.size() > 2) seconds += n[2];
  return seconds;
}

}  // namespace

long parseSlurmTime(std::string_view text, const std::string& flag) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    std::vector<long> n = numbers(text, text, flag);
    if (n.size() > 3) badTime(text, flag);
    return clockSeconds(n);
  }
  std::vector<long> days = numbers(text.substr(0, dash), text, flag);
  std::vector<long> rest = numbers(text.substr(dash + 1), text, flag);
  if (days.size() != 1 || rest.size() > 3) badTime(text, flag);
  return days[0] * 86400 + hourSeconds(rest);
}

std::string formatSlurmTime(long seconds) {
  long days = seconds / 86400;
  std::string clock =
      fmt::format("{:02}:{:02}:{:02}", seconds % 86400 / 3600, seconds % 3600 / 60, seconds % 60);
  return days > 0 ? fmt::format("{}-{}", days, clock) : clock;
}

}  // namespace distrun::submit
