// The gpu check's readers: device files, nvidia-smi and rocm-smi, run
// with a time limit, and the parsers of their answers.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"
#include "distrun/doctor/gpu_check.h"

namespace distrun::doctor {
namespace {

namespace fs = std::filesystem;

std::optional<long> parseNumber(std::string_view text) {
  text = trim(text);
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      })) {
    return std::nullopt;
  }
  try {
    return static_cast<long>(parseCount(text, "a number", INT64_MAX));
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}

// "81920", "[N/A]", "[Not Supported]": a figure or unknown.
std::optional<double> parseMiB(std::string_view text) {
  std::optional<long> value = parseNumber(text);
  if (!value) return std::nullopt;
  return static_cast<double>(*value);
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> parts;
  for (const std::string& part : split(line, ',')) parts.emplace_back(trim(part));
  return parts;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// "GPU[3]\t\t: PCI Bus: 0000:C1:00.0" -> (3, "PCI Bus", "0000:C1:00.0").
struct RocmLine {
  int gpu = 0;
  std::string key, value;
};
std::optional<RocmLine> parseRocmLine(const std::string& line) {
  if (line.rfind("GPU[", 0) != 0) return std::nullopt;
  size_t close = line.find(']');
  size_t colon = line.find(':', close);
  if (close == std::string::npos || colon == std::string::npos) return std::nullopt;
  std::optional<long> gpu = parseNumber(std::string_view(line).substr(4, close - 4));
  std::string rest = line.substr(colon + 1);
  size_t sep = rest.find(": ");
  if (!gpu || sep == std::string::npos) return std::nullopt;
  return RocmLine{static_cast<int>(*gpu), std::string(trim(rest.substr(0, sep))),
                  std::string(trim(rest.substr(sep + 2)))};
}

GpuDevice& deviceAt(std::vector<GpuDevice>& gpus, int index) {
  for (GpuDevice& g : gpus) {
    if (g.index == index) return g;
  }
  gpus.push_back(GpuDevice{index, "", "", std::nullopt, std::nullopt});
  return gpus.back();
}

ToolResult runSafely(const GpuTool& run, const std::vector<std::string>& argv) {
  try {
    return run(argv);
  } catch (const Error& e) {
    return ToolResult{-1, "", e.what()};
  }
}

}  // namespace

std::vector<GpuDevice> parseNvidiaGpus(const std::string& csv) {
  std::vector<GpuDevice> gpus;
  for (const std::string& line : split(csv, '\n')) {
    std::vector<std::string> f = fields(line);
    if (f.size() < 5) continue;
    std::optional<long> index = parseNumber(f[0]);
    if (!index) continue;
    gpus.push_back({static_cast<int>(*index), f[1], f[2], parseMiB(f[3]), parseMiB(f[4])});
  }
  return gpus;
}

std::vector<GpuProcess> parseNvidiaProcesses(const std::string& csv) {
  std::vector<GpuProcess> processes;
  for (const std::string& line : split(csv, '\n')) {
    std::vector<std::string> f = fields(line);
    if (f.size() < 4) continue;
    std::optional<long> pid = parseNumber(f[1]);
    if (!pid) continue;
    // A process name may hold commas: it is every field between pid and memory.
    std::vector<std::string> name(f.begin() + 2, f.end() - 1);
    processes.push_back({f[0], *pid, join(name, ","), parseMiB(f.back())});
  }
  return processes;
}

std::vector<GpuDevice> parseRocmGpus(const std::string& text) {
  std::vector<GpuDevice> gpus;
  for (const std::string& line : split(text, '\n')) {
    std::optional<RocmLine> l = parseRocmLine(line);
    if (!l) continue;
    GpuDevice& gpu = deviceAt(gpus, l->gpu);
    std::optional<long> bytes = parseNumber(l->value);
    double mib = bytes ? static_cast<double>(*bytes) / (1024.0 * 1024.0) : 0;
    if (l->key == "PCI Bus") gpu.id = l->value;
    if (l->key == "Card series" || l->key == "Card Series") gpu.name = l->value;
    if (l->key == "VRAM Total Memory (B)" && bytes) gpu.totalMiB = mib;
    if (l->key == "VRAM Total Used Memory (B)" && bytes) gpu.usedMiB = mib;
  }
  std::sort(gpus.begin(), gpus.end(),
            [](const GpuDevice& a, const GpuDevice& b) { return a.index < b.index; });
  return gpus;
}

std::vector<GpuProcess> parseRocmProcesses(const std::string& text) {
  std::vector<GpuProcess> processes;
  bool inTable = false;
  for (const std::string& line : split(text, '\n')) {
    std::vector<std::string> w = words(line);
    if (!w.empty() && w[0] == "PID") inTable = true;
    if (!inTable || w.size() < 6) continue;
    std::optional<long> pid = parseNumber(w[0]);
    if (!pid) continue;
    // PID, NAME (maybe several words), GPU(s), VRAM USED, SDMA USED, CU OCCUPANCY.
    std::vector<std::string> name(w.begin() + 1, w.end() - 4);
    std::optional<long> vram = parseNumber(w[w.size() - 3]);
    std::optional<double> mib;
    if (vram) mib = static_cast<double>(*vram) / (1024.0 * 1024.0);
    processes.push_back({"", *pid, join(name, " "), mib});
  }
  return processes;
}

GpuTool gpuToolWithin(std::chrono::milliseconds limit) {
  return [limit](const std::vector<std::string>& argv) {
    ToolRequest request;
    request.argv = argv;
    request.limit = limit;
    return runToolWithin(request);
  };
}

GpuVendor findGpuVendor(const std::string& root, std::vector<std::string>& deviceFiles) {
  std::error_code ec;
  std::vector<std::string> nvidia;
  for (const auto& entry : fs::directory_iterator(root + "/dev", ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 && parseNumber(name.substr(6))) {
      nvidia.push_back("/dev/" + name);
    }
  }
  std::sort(nvidia.begin(), nvidia.end());
  deviceFiles = nvidia;
  if (!nvidia.empty()) return GpuVendor::kNvidia;
  if (fs::exists(root + "/dev/kfd", ec)) {
    deviceFiles = {"/dev/kfd"};
    return GpuVendor::kAmd;
  }
  return GpuVendor::kNone;
}

void readGpuTools(GpuFacts& f, const GpuTool& run, const std::string& root) {
  bool nvidia = f.vendor == GpuVendor::kNvidia;
  f.tool = nvidia ? "nvidia-smi" : "rocm-smi";
  std::vector<std::string> listing =
      nvidia ? std::vector<std::string>{"nvidia-smi",
                                        "--query-gpu=index,uuid,name,memory.used,memory.total",
                                        "--format=csv,noheader,nounits"}
             : std::vector<std::string>{"rocm-smi", "--showbus", "--showproductname",
                                        "--showmeminfo", "vram"};
  f.listing = runSafely(run, listing);
  f.gpus = nvidia ? parseNvidiaGpus(f.listing->out) : parseRocmGpus(f.listing->out);
  // rocm-smi exits non-zero when any one figure is unsupported: its GPU
  // lines are the answer that counts.
  if (f.gpus.empty() || f.listing->timedOut) return;
  std::vector<std::string> processes =
      nvidia
          ? std::vector<std::string>{"nvidia-smi",
                                     "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
                                     "--format=csv,noheader,nounits"}
          : std::vector<std::string>{"rocm-smi", "--showpids"};
  f.processList = runSafely(run, processes);
  f.processes =
      nvidia ? parseNvidiaProcesses(f.processList->out) : parseRocmProcesses(f.processList->out);
  for (const GpuProcess& p : f.processes) {
    f.processCgroups[p.pid] = readFileIfPresent(fmt::format("{}/proc/{}/cgroup", root, p.pid));
  }
}

}  // namespace distrun::doctor
