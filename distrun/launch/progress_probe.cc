#include "distrun/launch/progress_probe.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/strings.h"

namespace distrun::launch {

namespace {

// The space-separated fields after the command's closing parenthesis.
std::vector<std::string_view> fieldsAfterCommand(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t close = line.rfind(')');
  if (close == std::string_view::npos) return fields;
  std::string_view rest = line.substr(close + 1);
  while (!rest.empty()) {
    size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    size_t end = rest.find_first_of(" \n", start);
    fields.push_back(rest.substr(start, end - start));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  return fields;
}

bool toNumber(std::string_view text, long long& value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

std::optional<std::string> readLine(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

}  // namespace

bool madeProgress(const WorkerProgress& now, const WorkerProgress& before) {
  if (now.reports > 0) return now.reports != before.reports;
  // Less than before: a process of the group ended, and its successor ran.
  const long long cpu = now.cpuTicks - before.cpuTicks;
  return cpu >= kMinProgressTicks || cpu < 0 || now.outputBytes != before.outputBytes;
}

// Fields after the command, counted from 0: state 0, pgrp 2, utime 11,
// stime 12, cutime 13, cstime 14 (proc(5) numbers them 3, 5, 14-17).
std::optional<ProcStat> parseProcStat(std::string_view line) {
  std::vector<std::string_view> f = fieldsAfterCommand(line);
  if (f.size() < 15 || f[0].size() != 1) return std::nullopt;
  ProcStat stat;
  stat.state = f[0][0];
  long long pgrp = 0;
  if (!toNumber(f[2], pgrp)) return std::nullopt;
  stat.pgrp = static_cast<int>(pgrp);
  for (size_t i = 11; i <= 14; ++i) {
    long long ticks = 0;
    if (!toNumber(f[i], ticks)) return std::nullopt;
    stat.cpuTicks += ticks;
  }
  return stat;
}

std::map<int, GroupUsage> ProcProgressProbe::usage(const std::set<int>& groups) const {
  std::map<int, GroupUsage> usage;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(procRoot_, error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::optional<std::string> line = readLine(entry.path() / "stat");
    std::optional<ProcStat> stat = line ? parseProcStat(*line) : std::nullopt;
    if (!stat || !groups.count(stat->pgrp)) continue;
    GroupUsage& group = usage[stat->pgrp];
    group.cpuTicks += stat->cpuTicks;
    group.stopped = group.stopped || stat->state == 'T';
  }
  return usage;
}

namespace {

// A wait channel as /proc/PID/task/TID/wchan gives it ("0": on a CPU).
std::string waitChannelOf(const std::filesystem::path& task) {
  std::ifstream in(task / "wchan");
  std::string channel;
  if (!in || !std::getline(in, channel) || channel.empty()) return "";
  return channel == "0" ? "running" : channel;
}

// "futex_wait_queue x4, ep_poll": each channel once, with its count.
std::string countedChannels(const std::map<std::string, int>& channels) {
  std::vector<std::string> parts;
  for (const auto& [channel, count] : channels) {
    parts.push_back(count == 1 ? channel : fmt::format("{} x{}", channel, count));
  }
  return distrun::join(parts, ", ");
}

}  // namespace

std::string ProcProgressProbe::waitChannels(int pid) const {
  const std::filesystem::path process = std::filesystem::path(procRoot_) / std::to_string(pid);
  const std::string main = waitChannelOf(process / "task" / std::to_string(pid));
  if (main.empty()) return "";
  std::map<std::string, int> others;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator(process / "task", error)) {
    if (task.path().filename() == std::to_string(pid)) continue;
    const std::string channel = waitChannelOf(task.path());
    if (!channel.empty()) ++others[channel];
  }
  const std::string rest = countedChannels(others);
  return main + " (main thread)" + (rest.empty() ? "" : ", " + rest);
}

const ProgressProbe& ProcProgressProbe::system() {
  static const ProcProgressProbe probe;
  return probe;
}

}  // namespace distrun::launch
