#include "distrun/doctor/gpu_check.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "distrun/doctor/checks.h"
#include "distrun/doctor/fake_tree.h"

namespace distrun::doctor {
namespace {

using testing::FakeTree;

// What nvidia-smi 535 prints on a DGX A100 node (4 of its 8 GPUs), and
// rocm-smi 5.x on a LUMI-G node (2 of its 8 GCDs).
constexpr const char* kNvidiaGpus =
    "0, GPU-5e3b9c9c-1a0c-3d6e-8a31-5a9f0b4c2d11, NVIDIA A100-SXM4-80GB, 3, 81920\n"
    "1, GPU-7d1f2e40-9b5c-4e71-b2a6-0c3d8e9f1a22, NVIDIA A100-SXM4-80GB, 3, 81920\n"
    "2, GPU-0a6c3b1d-2e4f-4a5b-9c8d-7e6f5a4b3c33, NVIDIA A100-SXM4-80GB, 40123, 81920\n"
    "3, GPU-9f8e7d6c-5b4a-4321-8fed-cba987654344, NVIDIA A100-SXM4-80GB, [N/A], 81920\n";
constexpr const char* kNvidiaProcesses =
    "GPU-0a6c3b1d-2e4f-4a5b-9c8d-7e6f5a4b3c33, 48213, /usr/bin/python3, 40120\n"
    "GPU-9f8e7d6c-5b4a-4321-8fed-cba987654344, 51002, /opt/app/serve,v2, [N/A]\n";
constexpr const char* kNvidiaBroken =
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running.\n\n";
constexpr const char* kRocmGpus =
    "\n\n============================ ROCm System Management Interface "
    "============================\n"
    "======================================= PCI Bus ID "
    "=======================================\n"
    "GPU[0]\t\t: PCI Bus: 0000:C1:00.0\n"
    "GPU[1]\t\t: PCI Bus: 0000:C6:00.0\n"
    "==========================================================================================\n"
    "====================================== Product Info "
    "======================================\n"
    "GPU[0]\t\t: Card series: \t\tAMD INSTINCT MI250X\n"
    "GPU[0]\t\t: Card model: \t\t0x0b0c\n"
    "GPU[0]\t\t: Card vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]\n"
    "GPU[0]\t\t: Card SKU: \t\tD65209\n"
    "GPU[1]\t\t: Card series: \t\tAMD INSTINCT MI250X\n"
    "GPU[1]\t\t: Card SKU: \t\tD65209\n"
    "================================== Memory Usage (Bytes) "
    "==================================\n"
    "GPU[0]\t\t: VRAM Total Memory (B): 68702699520\n"
    "GPU[0]\t\t: VRAM Total Used Memory (B): 11034624\n"
    "GPU[1]\t\t: VRAM Total Memory (B): 68702699520\n"
    "GPU[1]\t\t: VRAM Total Used Memory (B): 11034624\n"
    "==========================================================================================\n"
    "================================== End of ROCm SMI Log "
    "===================================\n";
constexpr const char* kRocmProcesses =
    "\n\n============================ ROCm System Management Interface "
    "============================\n"
    "===================================== KFD Processes "
    "======================================\n"
    "KFD process information:\n"
    "PID\tPROCESS NAME\tGPU(s)\tVRAM USED\tSDMA USED\tCU OCCUPANCY\n"
    "48213\tpython3\t1\t42949672960\t0\tUNKNOWN\n"
    "==========================================================================================\n"
    "================================== End of ROCm SMI Log "
    "===================================\n";
constexpr const char* kRocmNoProcesses =
    "============================ ROCm System Management Interface "
    "============================\n"
    "===================================== KFD Processes "
    "======================================\n"
    "No KFD PIDs currently running\n"
    "==========================================================================================\n";

// --- parsers ---

TEST(ParseNvidiaTest, GpusWithTheirMemory) {
  std::vector<GpuDevice> gpus = parseNvidiaGpus(kNvidiaGpus);
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[2].index, 2);
  EXPECT_EQ(gpus[2].id, "GPU-0a6c3b1d-2e4f-4a5b-9c8d-7e6f5a4b3c33");
  EXPECT_EQ(gpus[2].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gpus[2].usedMiB, 40123);
  EXPECT_EQ(gpus[2].totalMiB, 81920);
  EXPECT_FALSE(gpus[3].usedMiB);  // [N/A]
  EXPECT_TRUE(parseNvidiaGpus(kNvidiaBroken).empty());
  EXPECT_TRUE(parseNvidiaGpus("").empty());
}

TEST(ParseNvidiaTest, ProcessesNamesWithCommasIncluded) {
  std::vector<GpuProcess> processes = parseNvidiaProcesses(kNvidiaProcesses);
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].gpu, "GPU-0a6c3b1d-2e4f-4a5b-9c8d-7e6f5a4b3c33");
  EXPECT_EQ(processes[0].pid, 48213);
  EXPECT_EQ(processes[0].name, "/usr/bin/python3");
  EXPECT_EQ(processes[0].usedMiB, 40120);
  EXPECT_EQ(processes[1].name, "/opt/app/serve,v2");
  EXPECT_FALSE(processes[1].usedMiB);
  EXPECT_TRUE(parseNvidiaProcesses("").empty());
}

TEST(ParseRocmTest, GpusFromBusProductAndMemoryLines) {
  std::vector<GpuDevice> gpus = parseRocmGpus(kRocmGpus);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].index, 1);
  EXPECT_EQ(gpus[1].id, "0000:C6:00.0");
  EXPECT_EQ(gpus[1].name, "AMD INSTINCT MI250X");
  ASSERT_TRUE(gpus[0].totalMiB);
  EXPECT_DOUBLE_EQ(*gpus[0].totalMiB, 65520.0);
  EXPECT_TRUE(parseRocmGpus("ERROR: No AMD GPUs specified\n").empty());
}

TEST(ParseRocmTest, ProcessesFromTheKfdTable) {
  std::vector<GpuProcess> processes = parseRocmProcesses(kRocmProcesses);
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].gpu, "");
  EXPECT_EQ(processes[0].pid, 48213);
  EXPECT_EQ(processes[0].name, "python3");
  EXPECT_EQ(processes[0].usedMiB, 40960);
  EXPECT_TRUE(parseRocmProcesses(kRocmNoProcesses).empty());
}

// --- readers ---

TEST(FindGpuVendorTest, DeviceFilesSayWhichVendor) {
  FakeTree tree;
  std::vector<std::string> files;
  EXPECT_EQ(findGpuVendor(tree.root(), files), GpuVendor::kNone);
  EXPECT_TRUE(files.empty());
  tree.write("/dev/kfd", "");
  EXPECT_EQ(findGpuVendor(tree.root(), files), GpuVendor::kAmd);
  EXPECT_EQ(files, (std::vector<std::string>{"/dev/kfd"}));
  for (const char* name : {"/dev/nvidia1", "/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"}) {
    tree.write(name, "");
  }
  EXPECT_EQ(findGpuVendor(tree.root(), files), GpuVendor::kNvidia);
  EXPECT_EQ(files, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1"}));
}

// Answers each tool run with canned text and records what was run.
struct FakeTools {
  std::vector<std::vector<std::string>> runs;
  std::vector<ToolResult> answers;
  GpuTool runner() {
    return [this](const std::vector<std::string>& argv) {
      runs.push_back(argv);
      ToolResult r = answers.at(runs.size() - 1);
      return r;
    };
  }
};

TEST(ReadGpuToolsTest, AsksNvidiaSmiForGpusThenProcessesAndReadsTheirCgroups) {
  FakeTree tree;
  tree.write("/proc/48213/cgroup", "0::/system.slice/slurmstepd.scope/job_77/step_0\n");
  FakeTools tools;
  tools.answers = {{0, kNvidiaGpus, ""}, {0, kNvidiaProcesses, ""}};
  GpuFacts f;
  f.vendor = GpuVendor::kNvidia;
  readGpuTools(f, tools.runner(), tree.root());
  ASSERT_EQ(tools.runs.size(), 2u);
  EXPECT_EQ(tools.runs[0], (std::vector<std::string>{
                               "nvidia-smi", "--query-gpu=index,uuid,name,memory.used,memory.total",
                               "--format=csv,noheader,nounits"}));
  EXPECT_EQ(tools.runs[1],
            (std::vector<std::string>{"nvidia-smi",
                                      "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
                                      "--format=csv,noheader,nounits"}));
  EXPECT_EQ(f.tool, "nvidia-smi");
  EXPECT_EQ(f.gpus.size(), 4u);
  EXPECT_EQ(f.processes.size(), 2u);
  EXPECT_EQ(f.processCgroups.at(48213), "0::/system.slice/slurmstepd.scope/job_77/step_0\n");
  EXPECT_FALSE(f.processCgroups.at(51002));  // no /proc entry: unreadable
}

TEST(ReadGpuToolsTest, AFailedListingAsksNoMore) {
  FakeTools tools;
  tools.answers = {{9, kNvidiaBroken, ""}};
  GpuFacts f;
  f.vendor = GpuVendor::kNvidia;
  readGpuTools(f, tools.runner(), "");
  EXPECT_EQ(tools.runs.size(), 1u);
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_FALSE(f.processList);
}

TEST(ReadGpuToolsTest, AsksRocmSmiOnAmdNodes) {
  FakeTools tools;
  tools.answers = {{2, kRocmGpus, "some figure unsupported"}, {0, kRocmNoProcesses, ""}};
  GpuFacts f;
  f.vendor = GpuVendor::kAmd;
  readGpuTools(f, tools.runner(), "");
  ASSERT_EQ(tools.runs.size(), 2u);
  EXPECT_EQ(tools.runs[0], (std::vector<std::string>{"rocm-smi", "--showbus", "--showproductname",
                                                     "--showmeminfo", "vram"}));
  EXPECT_EQ(tools.runs[1], (std::vector<std::string>{"rocm-smi", "--showpids"}));
  EXPECT_EQ(f.gpus.size(), 2u);  // a non-zero exit with GPU lines still answers
  EXPECT_TRUE(f.processes.empty());
}

TEST(GpuToolWithinTest, EndsAToolThatRunsPastItsLimit) {
  ToolResult r = gpuToolWithin(std::chrono::milliseconds(200))({"sleep", "30"});
  EXPECT_TRUE(r.timedOut) << r.exitCode;
  r = gpuToolWithin(std::chrono::seconds(30))({"true"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_FALSE(r.timedOut);
  r = gpuToolWithin(std::chrono::seconds(30))({"distrun-no-such-tool"});
  EXPECT_EQ(r.exitCode, 127);
}

TEST(ReadGpuFactsTest, ThisMachineWithoutGpusSkips) {
  if (std::filesystem::exists("/dev/nvidia0") || std::filesystem::exists("/dev/kfd")) {
    GTEST_SKIP() << "this machine has a GPU";
  }
  CheckResult r = checkGpus(ProbeContext{});
  EXPECT_EQ(r.check, "gpu");
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "no GPU on this node (no /dev/nvidia0, no /dev/kfd)");
}

TEST(ReadGpuFactsTest, PlansTheLocalRanksGpusOnTheSiteNode) {
  FakeTree tree;
  tree.write("/dev/nvidia0", "");
  ProbeContext ctx;
  ctx.site = cluster::SiteProfile{};
  ctx.site->node = binding::NodeTopology{};
  ctx.site->node->cpus = {0, 1, 2, 3};
  for (int g = 0; g < 4; ++g) ctx.site->node->gpus.push_back({g, 0, {g}});
  ctx.layout.localWorldSize = 4;
  ctx.layout.localRank = 2;
  ctx.env.set("SLURM_JOB_ID", "77");
  ctx.env.set("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  ctx.options.timeLimit = std::chrono::seconds(60);
  FakeTools tools;
  tools.answers = {{0, kNvidiaGpus, ""}, {0, "", ""}};
  GpuFacts f = readGpuFacts(ctx, tools.runner(), tree.root());
  EXPECT_EQ(f.vendor, GpuVendor::kNvidia);
  EXPECT_EQ(f.limit, std::chrono::seconds(20));
  EXPECT_EQ(f.jobId, "77");
  EXPECT_EQ(f.visibleDevices, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(f.visibleVariable, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(f.topologyGpus, 4);
  EXPECT_TRUE(f.oneTaskPerRank);
  EXPECT_EQ(f.planGpu, 2);
  EXPECT_EQ(judgeGpus(f).state, CheckState::kOk);
}

}  // namespace
}  // namespace distrun::doctor
