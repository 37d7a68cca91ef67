// Jobs in a container image made by `distrun wrap` (Debian's python3-torch):
// mpirun and srun tasks through `distrun exec --container`, a two-node
// PyTorch DDP job through `distrun submit --container`, the node's one
// mount and what is left of it after a crash or a killed agent.
// Label container; the Slurm cases share the cluster's lock.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/container_tools.h"
#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

std::string missingTools() {
  return containerToolsMissing({"mmdebstrap", "mksquashfs", "squashfuse", "bwrap"});
}

// Each rank writes the variables it saw inside the container, and a file of
// the image, to REPORT_DIR/RANK.json (the host's /tmp is bound inside);
// files, not stdout, which mpirun may interleave.
const char* kReportRank =
    "python3 -c 'import json, os; e = os.environ; open(e[\"REPORT_DIR\"] + \"/\" + e[\"RANK\"] "
    "+ \".json\", \"w\").write(json.dumps({k: e.get(k) for k in (\"RANK\", \"WORLD_SIZE\", "
    "\"LOCAL_RANK\", \"DISTRUN_CONTAINER\")} | {\"debian\": "
    "open(\"/etc/debian_version\").read().strip()}))'";

std::map<int, nlohmann::json> reports(const std::string& dir) {
  std::map<int, nlohmann::json> byRank;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    nlohmann::json j = nlohmann::json::parse(in);
    byRank[std::stoi(j["RANK"].get<std::string>())] = j;
  }
  return byRank;
}

void expectRanks(const std::map<int, nlohmann::json>& byRank, int world, const std::string& image) {
  ASSERT_EQ(byRank.size(), static_cast<size_t>(world));
  for (const auto& [rank, j] : byRank) {
    EXPECT_EQ(j["WORLD_SIZE"], std::to_string(world));
    EXPECT_EQ(j["DISTRUN_CONTAINER"], image);
    EXPECT_FALSE(j["debian"].get<std::string>().empty());
  }
}

class ContainerMpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = missingTools(); !reason.empty()) GTEST_SKIP() << reason;
    if (runCommand("command -v mpirun").exitCode != 0) GTEST_SKIP() << "needs mpirun";
    image_ = torchImage();
    ASSERT_FALSE(image_.empty());
  }
  std::string image_;
};

TEST_F(ContainerMpiTest, MpirunTasksRunInsideTheImageWithTheirRanks) {
  ScratchDir dir("container-mpirun");
  CommandResult r = runCommand("REPORT_DIR=" + quote(dir.path()) +
                               " timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 " +
                               quote(binaryPath("distrun")) + " exec --container " + quote(image_) +
                               " -- " + kReportRank);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  expectRanks(reports(dir.path()), 2, image_);
  EXPECT_THAT(imageMounts(image_), ::testing::IsEmpty());
}

class ContainerSlurmTest : public SlurmTest {
 protected:
  void SetUp() override {
    SlurmTest::SetUp();
    if (IsSkipped()) return;
    if (std::string reason = missingTools(); !reason.empty()) GTEST_SKIP() << reason;
    image_ = torchImage();
    ASSERT_FALSE(image_.empty());
  }
  std::string image_;
  ScratchDir dir_{"container-job"};
};

TEST_F(ContainerSlurmTest, SrunTasksOnTwoNodesRunInsideTheImageWithTheirRanks) {
  CommandResult r =
      runCommand("cd " + quote(dir_.path()) + " && " + cluster_->env() +
                 "REPORT_DIR=" + quote(dir_.path()) + " timeout 120 srun -N2 -n4 " + distrun() +
                 " exec --container " + quote(image_) + " -- " + kReportRank);
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  std::map<int, nlohmann::json> byRank = reports(dir_.path());
  expectRanks(byRank, 4, image_);
  std::set<std::string> localRanks;
  for (const auto& [rank, j] : byRank) localRanks.insert(j["LOCAL_RANK"].get<std::string>());
  EXPECT_EQ(localRanks, (std::set<std::string>{"0", "1"}));
  EXPECT_THAT(imageMounts(image_), ::testing::IsEmpty());
}

// `distrun wrap --wrappers PREFIX`: PREFIX/bin/where runs /opt/tool/bin/where
// inside the image, from a host shell, under srun and under distrun run.
TEST_F(ContainerSlurmTest, WrappersRunTheirProgramInsideFromAShellSrunAndDistrunRun) {
  const std::string tree = dir_.path() + "/tool";
  std::filesystem::create_directories(tree + "/bin");
  {
    std::ofstream(tree + "/marker") << "inside\n";
    std::ofstream where(tree + "/bin/where");
    where << "#!/bin/busybox sh\n"
             "echo \"task=${RANK:-${SLURM_PROCID:-none}} in=$DISTRUN_CONTAINER "
             "sees=$(/bin/busybox cat /opt/tool/marker)\"\n";
  }
  std::filesystem::permissions(tree + "/bin/where", std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  const std::string image = dir_.path() + "/tool.sif";
  const std::string prefix = dir_.path() + "/prefix";
  CommandResult built = runCommand(distrun() + " wrap -q -o " + quote(image) +
                                   " --apt busybox --variant extract --dir " +
                                   quote(tree + ":/opt/tool") + " --wrappers " + quote(prefix));
  ASSERT_EQ(built.exitCode, 0) << built.out << built.err;
  const std::string where = quote(prefix + "/bin/where");
  const std::string inside = " in=" + image + " sees=inside";

  CommandResult shell = runCommand(where);
  EXPECT_EQ(shell.out, "task=none" + inside + "\n") << shell.err;
  CommandResult srun = runCommand("cd " + quote(dir_.path()) + " && " + cluster_->env() +
                                  " timeout 60 srun -N2 -n2 " + where);
  EXPECT_THAT(lines(srun.out),
              ::testing::UnorderedElementsAre("task=0" + inside, "task=1" + inside))
      << srun.err;
  CommandResult run = runCommand(distrun() + " run --nproc-per-node 2 --log-prefix '' " + where);
  EXPECT_THAT(lines(run.out), ::testing::UnorderedElementsAre("task=0" + inside, "task=1" + inside))
      << run.err;
  EXPECT_THAT(imageMounts(image), ::testing::IsEmpty());
}

// The local cluster's node names resolve through nss_wrapper, preloaded
// from the host (a real cluster's resolve through the bound /etc/hosts or
// DNS): the ranks in the image need the library to find node1.
constexpr const char* kNssWrapper = "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so";

// Debian's PyTorch inside the image, two nodes of two ranks: DDP ends with
// the same parameters on every rank (ddp_check.py checks, and says so).
TEST_F(ContainerSlurmTest, SubmittedDdpJobOnTwoNodesEndsWithEqualParameters) {
  std::string examples = sourcePath("examples/python");
  CommandResult r = runCommand(
      "cd " + quote(dir_.path()) + " && " + cluster_->env() + " timeout 400 " + distrun() +
      " submit --wait --nodes 2 " + "--time 10 --output " + quote(dir_.path() + "/%j.out") +
      " --container " + quote(image_) + " --bind " + quote(examples + ":/opt/examples:ro") +
      " --bind " + quote(std::string(kNssWrapper) + ":" + kNssWrapper + ":ro") +
      " -- run --nproc-per-node 2 /opt/examples/ddp_check.py");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  std::set<double> checksums;
  std::set<int> ranks;
  for (const std::string& line : lines(r.out)) {
    size_t brace = line.find('{');
    if (brace == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line.substr(brace));
    ranks.insert(j["rank"].get<int>());
    checksums.insert(j["checksum"].get<double>());
    EXPECT_EQ(j["world"], 4);
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3})) << r.out;
  EXPECT_EQ(checksums.size(), 1u) << r.out;
}

// distrun's own programs, bound in from the host, run on the image's
// libraries: a two-rank training and a benchmark.
TEST_F(ContainerMpiTest, DistrunTrainAndBenchRunInsideTheImage) {
  CommandResult train =
      runCommand(quote(binaryPath("distrun")) + " train --container " + quote(image_) +
                 " --nproc-per-node 2 linear --epochs 1 --progress epochs 2>&1");
  EXPECT_EQ(train.exitCode, 0) << train.out;
  EXPECT_THAT(train.out, HasSubstr("linear on 2 ranks"));
  CommandResult bench = runCommand(quote(binaryPath("distrun")) + " bench --container " +
                                   quote(image_) + " all_reduce -b 1K -e 4K -n 2 2>&1");
  EXPECT_EQ(bench.exitCode, 0) << bench.out;
  EXPECT_THAT(bench.out, HasSubstr("# Avg bus bandwidth"));
  EXPECT_THAT(imageMounts(image_), ::testing::IsEmpty());
}

// Mounts of `image` seen while `command` runs in the background, sampled
// until it ends.
size_t mostMountsWhile(const std::string& image, const std::string& command, int& exitCode) {
  ScratchDir logs("container-mounts");
  int pid = startCommand(command, logs.path() + "/log");
  size_t most = 0;
  while (processAlive(pid)) {
    most = std::max(most, imageMounts(image).size());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  exitCode = waitCommand(pid);
  return most;
}

class ContainerNodeMountTest : public ContainerMpiTest {};

TEST_F(ContainerNodeMountTest, FourWorkersShareOneMountThatIsGoneAtTheEnd) {
  int exitCode = -1;
  size_t most =
      mostMountsWhile(image_,
                      quote(binaryPath("distrun")) + " run --nproc-per-node 4 --container " +
                          quote(image_) + " --no-python /bin/sh -c 'sleep 2'",
                      exitCode);
  EXPECT_EQ(exitCode, 0);
  EXPECT_EQ(most, 1u) << "one mount for the node, not one per worker";
  EXPECT_THAT(imageMounts(image_), ::testing::IsEmpty());
}

TEST_F(ContainerNodeMountTest, AWorkerThatCrashesLeavesNoMount) {
  CommandResult r =
      runCommand(quote(binaryPath("distrun")) + " run --nproc-per-node 2 --container " +
                 quote(image_) + " --no-python /bin/sh -c 'exit 3'");
  EXPECT_EQ(r.exitCode, 3) << r.err;
  EXPECT_THAT(imageMounts(image_), ::testing::IsEmpty());
}

TEST_F(ContainerNodeMountTest, AKilledAgentsMountIsCleanedByTheNextRun) {
  ScratchDir logs("container-kill");
  int agent = startCommand(quote(binaryPath("distrun")) + " run --nproc-per-node 2 --container " +
                               quote(image_) + " --no-python /bin/sh -c 'sleep 60'",
                           logs.path() + "/log");
  for (int i = 0; i < 200 && imageMounts(image_).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(imageMounts(image_).size(), 1u);
  ::kill(agent, SIGKILL);
  waitCommand(agent);
  CommandResult next =
      runCommand(quote(binaryPath("distrun")) + " enter " + quote(image_) + " -- /bin/true");
  EXPECT_EQ(next.exitCode, 0) << next.err;
  EXPECT_THAT(imageMounts(image_), ::testing::IsEmpty()) << "the stale mount was cleaned";
}

}  // namespace
}  // namespace distrun::testing
