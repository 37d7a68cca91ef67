#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/tool_process.h"
#include "distrun/doctor/check_result.h"
#include "distrun/doctor/node_facts.h"
#include "distrun/doctor/probe_context.h"

// Private to distrun/doctor: the "gpu" check's facts, readers, the parsers
// of nvidia-smi's and rocm-smi's answers, and the judge (docs/doctor.md,
// "The node's system").

namespace distrun::doctor {

enum class GpuVendor { kNone, kNvidia, kAmd };

// One GPU as the vendor's tool lists it.
struct GpuDevice {
  int index = 0;   // the tool's index (PCI bus order on NVIDIA and ROCm)
  std::string id;  // NVIDIA: its UUID ("GPU-..."); AMD: its PCI bus id
  std::string name;
  std::optional<double> usedMiB, totalMiB;  // memory
};

// One process holding a GPU.
struct GpuProcess {
  std::string gpu;  // NVIDIA: the GPU's UUID; AMD: "" (rocm-smi --showpids counts GPUs only)
  long pid = 0;
  std::string name;
  std::optional<double> usedMiB;
};

// `nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total
// --format=csv,noheader,nounits`: one GPU per line ("0, GPU-5e.., NVIDIA
// A100-SXM4-80GB, 3, 81920"). Lines that are not such are left out.
std::vector<GpuDevice> parseNvidiaGpus(const std::string& csv);
// `nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory
// --format=csv,noheader,nounits`: one process per line; "[N/A]" memory is
// unknown. Nothing at all when no process holds a GPU.
std::vector<GpuProcess> parseNvidiaProcesses(const std::string& csv);
// `rocm-smi --showbus --showmeminfo vram`: "GPU[0]  : PCI Bus: 0000:C1:00.0"
// and "GPU[0]  : VRAM Total Memory (B): 68702699520" lines.
std::vector<GpuDevice> parseRocmGpus(const std::string& text);
// `rocm-smi --showpids`: a table under a "PID  PROCESS NAME  GPU(s)  VRAM
// USED ..." header (VRAM in bytes), or "No KFD PIDs currently running".
std::vector<GpuProcess> parseRocmProcesses(const std::string& text);

// Runs nvidia-smi or rocm-smi (argv[0] looked up on PATH) and collects what
// it left: the seam between the check and the GPU tools. The real one is
// gpuToolWithin.
using GpuTool = std::function<ToolResult(const std::vector<std::string>& argv)>;
// Runs argv with runToolWithin: after `limit` its process group is killed
// and the result has timedOut set.
GpuTool gpuToolWithin(std::chrono::milliseconds limit);

// What the gpu check learns of this node.
struct GpuFacts {
  GpuVendor vendor = GpuVendor::kNone;
  std::vector<std::string> deviceFiles;  // /dev/nvidia0 ..., /dev/kfd
  std::string tool;                      // "nvidia-smi", "rocm-smi"
  std::chrono::milliseconds limit{0};    // each tool run's time limit
  // The tool's answers: the GPUs, then the processes (nullopt: not run,
  // because the first one failed).
  std::optional<ToolResult> listing, processList;
  std::vector<GpuDevice> gpus;
  std::vector<GpuProcess> processes;
  // /proc/PID/cgroup of each process, nullopt when it cannot be read (a
  // pid of another container, a process gone).
  std::map<long, std::optional<std::string>> processCgroups;
  std::string jobId;  // SLURM_JOB_ID; empty outside a Slurm job
  // The GPUs this task sees (cluster::readVisibleDevices) and the variable.
  std::vector<std::string> visibleDevices;
  std::string visibleVariable;
  // The plan (binding::rankDevice on the site's node, else this node's):
  // this local rank's GPU, the node's index, when the step runs one task per
  // rank and the plan could be made; `planNote` says why not otherwise.
  std::optional<int> planGpu;
  std::string planNote;
  int topologyGpus = 0;  // the GPUs of the plan's node
  bool oneTaskPerRank = false;
  int localRank = 0;
  RanksPerNode ranks;
};

// The vendor from the device files under `root` ("" for this machine):
// /dev/nvidiaN (NVIDIA), /dev/kfd (AMD, ROCm's compute device).
GpuVendor findGpuVendor(const std::string& root, std::vector<std::string>& deviceFiles);

// Runs the vendor's tool twice through `run`: listing the GPUs, then the
// processes holding them (only when the listing answered with exit 0), and
// reads /proc/PID/cgroup under `root` for each process.
void readGpuTools(GpuFacts& facts, const GpuTool& run, const std::string& root);

// Everything of this task: the vendor, the tools' answers (each run limited
// to a third of ctx.limit(), so both fit in the check's time), the visible
// devices and the plan. Never throws.
GpuFacts readGpuFacts(const ProbeContext& ctx, const GpuTool& run, const std::string& root);

// "gpu": skip without a GPU device; warn when the tool is not on PATH;
// fail when it does not answer within its limit, exits non-zero or lists
// no GPU; fail when a visible device names a GPU the task cannot reach,
// warn when the visible GPUs differ from this rank's in the plan; fail
// (warn outside a Slurm job, where ownership is unknown) when processes
// not of this job hold the task's GPUs.
CheckResult judgeGpus(const GpuFacts& facts);

}  // namespace distrun::doctor
