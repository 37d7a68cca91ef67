#include "distrun/doctor/limits_checks.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "distrun/doctor/checks.h"
#include "distrun/doctor/fake_tree.h"
#include "distrun/doctor/node_facts.h"

namespace distrun::doctor {
namespace {

using testing::FakeTree;

FolderFacts folderWith(const std::string& path, uint64_t free, uint64_t total) {
  FolderFacts f;
  f.path = path;
  f.exists = true;
  f.isFolder = true;
  f.freeBytes = free;
  f.totalBytes = total;
  return f;
}

// --- readFolder ---

TEST(ReadFolderTest, AWritableFolderHasItsSpace) {
  FakeTree tree;
  FolderFacts f = readFolder(tree.root());
  EXPECT_EQ(f.path, tree.root());
  EXPECT_TRUE(f.exists);
  EXPECT_TRUE(f.isFolder);
  EXPECT_EQ(f.createError, "");
  ASSERT_TRUE(f.freeBytes && f.totalBytes);
  EXPECT_LE(*f.freeBytes, *f.totalBytes);
  EXPECT_TRUE(std::filesystem::is_empty(tree.root()));  // the trial file is gone
}

TEST(ReadFolderTest, MissingPathsAndFilesAreNotFolders) {
  FakeTree tree;
  FolderFacts missing = readFolder(tree.path("/none"));
  EXPECT_FALSE(missing.exists);
  EXPECT_FALSE(missing.isFolder);
  tree.write("/file", "x");
  FolderFacts file = readFolder(tree.path("/file"));
  EXPECT_TRUE(file.exists);
  EXPECT_FALSE(file.isFolder);
  EXPECT_FALSE(file.freeBytes);
}

// Root writes regardless of mode bits: as root, the reading runs in a child
// that became the user nobody (65534) first.
TEST(ReadFolderTest, AFolderWithoutWritePermissionSaysWhy) {
  FakeTree tree;
  tree.makeFolder("/locked");
  namespace fs = std::filesystem;
  fs::permissions(tree.root(), fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
  fs::permissions(tree.path("/locked"), fs::perms::owner_read | fs::perms::owner_exec |
                                            fs::perms::others_read | fs::perms::others_exec);
  auto createError = [&] { return readFolder(tree.path("/locked")).createError; };
  if (::geteuid() != 0) {
    EXPECT_EQ(createError(), "Permission denied");
  } else {
    EXPECT_EXIT(
        {
          if (::setgid(65534) != 0 || ::setuid(65534) != 0) std::_Exit(2);
          std::_Exit(createError() == "Permission denied" ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
  }
  fs::permissions(tree.path("/locked"), fs::perms::owner_all);
}

// --- shm ---

TEST(SharedMemoryTest, MissingFails) {
  FolderFacts f;
  f.path = "/dev/shm";
  CheckResult r = judgeSharedMemory(f);
  EXPECT_EQ(r.check, "shm");
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "/dev/shm does not exist");
  EXPECT_EQ(r.fix,
            "mount a tmpfs on /dev/shm (a container needs the host's: docker run --ipc=host or "
            "--shm-size=16g; apptainer binds it)");
}

TEST(SharedMemoryTest, AFileInsteadOfAFolderFails) {
  FolderFacts f;
  f.path = "/dev/shm";
  f.exists = true;
  CheckResult r = judgeSharedMemory(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "/dev/shm is not a folder");
}

TEST(SharedMemoryTest, UnwritableFails) {
  FolderFacts f = folderWith("/dev/shm", kGiB, kGiB);
  f.createError = "Read-only file system";
  CheckResult r = judgeSharedMemory(f);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "cannot create a file in /dev/shm: Read-only file system");
  EXPECT_EQ(r.fix, "/dev/shm must be writable by every user (mode 1777): ask the admins");
}

TEST(SharedMemoryTest, NoRoomForAFileFailsWithTheSpaceFix) {
  FolderFacts f = folderWith("/dev/shm", kGiB, kGiB);
  f.createError = "No space left on device";
  CheckResult r = judgeSharedMemory(f);
  EXPECT_EQ(r.fix,
            "give /dev/shm more room (docker run --shm-size=16g, or --ipc=host) or remove what "
            "earlier jobs left in it");
}

TEST(SharedMemoryTest, DockersDefaultFails) {
  CheckResult r = judgeSharedMemory(folderWith("/dev/shm", 64 * kMiB, 64 * kMiB));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "/dev/shm has 64.0 MiB free of 64.0 MiB; at least 256.0 MiB wanted");
  EXPECT_EQ(r.fix,
            "give /dev/shm more room (docker run --shm-size=16g, or --ipc=host) or remove what "
            "earlier jobs left in it");
  EXPECT_EQ(r.values.at("free_bytes"), static_cast<double>(64 * kMiB));
  EXPECT_EQ(r.values.at("total_bytes"), static_cast<double>(64 * kMiB));
}

TEST(SharedMemoryTest, UnderAGibibyteWarns) {
  CheckResult r = judgeSharedMemory(folderWith("/dev/shm", 512 * kMiB, 2 * kGiB));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail, "/dev/shm has 512.0 MiB free of 2.0 GiB; 1.0 GiB or more recommended");
}

TEST(SharedMemoryTest, RoomyPasses) {
  CheckResult r = judgeSharedMemory(folderWith("/dev/shm", 24 * kGiB, 24 * kGiB));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "/dev/shm has 24.0 GiB free of 24.0 GiB");
  EXPECT_EQ(r.fix, "");
  EXPECT_EQ(r.facts.at("folder"), "/dev/shm");
}

TEST(SharedMemoryTest, UnknownSpacePasses) {
  FolderFacts f = folderWith("/dev/shm", 0, 0);
  f.freeBytes.reset();
  CheckResult r = judgeSharedMemory(f);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "/dev/shm is writable; its free space is unknown");
}

TEST(SharedMemoryTest, ThisMachineHasDevShm) {
  CheckResult r = checkSharedMemory(ProbeContext{});
  EXPECT_EQ(r.check, "shm");
  EXPECT_EQ(r.detail.rfind("/dev/shm has ", 0), 0u) << r.detail;
  EXPECT_GT(r.values.at("total_bytes"), 0);
}

// --- tmpdir ---

constexpr const char* kTmpFix =
    "export TMPDIR=FOLDER on a node-local disk with room (a folder of your own on the node's "
    "scratch), or free space in ";

TEST(TmpdirTest, AFullSmallTmpdirFailsWithItsFreeSpace) {
  CheckResult r = judgeTmpdir(folderWith("/mnt/small", 3 * kMiB, 4 * kMiB), true);
  EXPECT_EQ(r.check, "tmpdir");
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "$TMPDIR /mnt/small has 3.0 MiB free of 4.0 MiB; at least 1.0 GiB wanted");
  EXPECT_EQ(r.fix, std::string(kTmpFix) + "/mnt/small");
  EXPECT_EQ(r.values.at("free_bytes"), static_cast<double>(3 * kMiB));
}

TEST(TmpdirTest, UnderTenGibibytesWarns) {
  CheckResult r = judgeTmpdir(folderWith("/tmp", 5 * kGiB, 50 * kGiB), false);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "/tmp ($TMPDIR unset) has 5.0 GiB free of 50.0 GiB; 10.0 GiB or more recommended");
  EXPECT_EQ(r.fix, std::string(kTmpFix) + "/tmp");
}

TEST(TmpdirTest, RoomyPasses) {
  CheckResult r = judgeTmpdir(folderWith("/scratch/u", 500 * kGiB, 1024 * kGiB), true);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "$TMPDIR /scratch/u has 500.0 GiB free of 1.0 TiB");
}

TEST(TmpdirTest, AMissingTmpdirFails) {
  FolderFacts f;
  f.path = "/scratch/gone";
  CheckResult r = judgeTmpdir(f, true);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "$TMPDIR /scratch/gone does not exist");
  EXPECT_EQ(r.fix, "mkdir -p /scratch/gone, or export TMPDIR=FOLDER that exists");
  f.path = "/tmp";
  r = judgeTmpdir(f, false);
  EXPECT_EQ(r.detail, "/tmp ($TMPDIR unset) does not exist");
  EXPECT_EQ(r.fix, "export TMPDIR=FOLDER, a node-local folder with room");
}

TEST(TmpdirTest, UnwritableFails) {
  FolderFacts f = folderWith("/scratch", kGiB, kGiB);
  f.createError = "Permission denied";
  CheckResult r = judgeTmpdir(f, true);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "cannot create a file in $TMPDIR /scratch: Permission denied");
  EXPECT_EQ(r.fix, "export TMPDIR=FOLDER, a node-local folder you can write to");
}

TEST(SnapshotDirTest, APseudoFileSystemIsNotShortOfRoom) {
  SnapshotFacts s;
  s.snapshot = "/proc/x.snap";
  s.folder = "/proc";
  s.facts = folderWith("/proc", kGiB, kGiB);
  s.facts.createError = "No such file or directory";
  CheckResult r = judgeSnapshotDir(s);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.fix,
            "choose --snapshot in a folder you can write to (a project or scratch file system)");
}

TEST(TmpdirTest, ReadsTmpdirFromTheTasksEnvironment) {
  FakeTree tree;
  ProbeContext ctx;
  ctx.env.set("TMPDIR", tree.root());
  CheckResult r = checkTmpdir(ctx);
  EXPECT_EQ(r.detail.rfind("$TMPDIR " + tree.root() + " has ", 0), 0u) << r.detail;
  EXPECT_GE(r.values.at("free_bytes"), 0);
  ctx.env.set("TMPDIR", tree.path("/missing"));
  r = checkTmpdir(ctx);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "$TMPDIR " + tree.path("/missing") + " does not exist");
}

// --- snapshot-dir ---

TEST(SnapshotDirTest, NoSnapshotSkips) {
  CheckResult r = judgeSnapshotDir(readSnapshotFacts(std::nullopt));
  EXPECT_EQ(r.check, "snapshot-dir");
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "no --snapshot given");
}

TEST(SnapshotDirTest, AMissingFolderFails) {
  FakeTree tree;
  SnapshotFacts s = readSnapshotFacts(tree.path("/out/s.snap"));
  EXPECT_EQ(s.folder, tree.path("/out"));
  CheckResult r = judgeSnapshotDir(s);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "the folder " + tree.path("/out") + " of --snapshot " +
                          tree.path("/out/s.snap") +
                          " does not exist (distrun train does not create it)");
  EXPECT_EQ(r.fix, "mkdir -p " + tree.path("/out"));
}

TEST(SnapshotDirTest, ABareNameIsInTheWorkingFolder) {
  SnapshotFacts s = readSnapshotFacts(std::string("s.snap"));
  EXPECT_EQ(s.folder, ".");
  EXPECT_TRUE(s.facts.isFolder);
}

TEST(SnapshotDirTest, AnExistingFolderIsJudgedByItsSpace) {
  SnapshotFacts s;
  s.snapshot = "/proj/run/s.snap";
  s.folder = "/proj/run";
  s.facts = folderWith("/proj/run", 200 * kMiB, 100 * kGiB);
  CheckResult r = judgeSnapshotDir(s);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "the folder /proj/run of --snapshot /proj/run/s.snap has 200.0 MiB free of 100.0 "
            "GiB; at least 1.0 GiB wanted");
  EXPECT_EQ(r.fix,
            "free space in /proj/run or choose --snapshot in a folder with room (a project or "
            "scratch file system)");
  s.facts.freeBytes = 2 * kGiB;
  EXPECT_EQ(judgeSnapshotDir(s).state, CheckState::kWarn);
  s.facts.freeBytes = 20 * kGiB;
  EXPECT_EQ(judgeSnapshotDir(s).state, CheckState::kOk);
}

TEST(SnapshotDirTest, ReadsTheOptionOnThisMachine) {
  FakeTree tree;
  ProbeContext ctx;
  ctx.options.snapshot = tree.path("/s.snap");
  CheckResult r = checkSnapshotDir(ctx);
  EXPECT_NE(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail.rfind("the folder " + tree.root() + " of --snapshot", 0), 0u) << r.detail;
}

// --- limits ---

LimitsFacts generous() {
  LimitsFacts f;
  f.nofileSoft = 65536;
  f.nofileHard = 65536;
  return f;
}

TEST(OpenFilesNeededTest, StoreConnectionsPeersAndAMargin) {
  EXPECT_EQ(openFilesNeeded(1, 1), 2u + 0u + 512u);
  EXPECT_EQ(openFilesNeeded(2, 1), 4u + 1u + 512u);
  EXPECT_EQ(openFilesNeeded(1000, 8), 2000u + 7999u + 512u);
}

TEST(LimitsTest, UnlimitedLockedMemoryAndRoomForFilesPass) {
  CheckResult r = judgeLimits(generous(), 2, 4);
  EXPECT_EQ(r.check, "limits");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "locked memory unlimited (hard unlimited), no RDMA device; open files 65536 (hard "
            "65536), 523 wanted for 2 nodes x 4 ranks");
  EXPECT_EQ(r.fix, "");
  EXPECT_EQ(r.values.at("open_files"), 65536);
  EXPECT_EQ(r.values.at("open_files_wanted"), 523);
  EXPECT_EQ(r.values.count("memlock_bytes"), 0u);
}

TEST(LimitsTest, LimitedLockedMemoryWithoutRdmaPasses) {
  LimitsFacts f = generous();
  f.memlockSoft = f.memlockHard = 64 * kKiB;
  CheckResult r = judgeLimits(f, 1, 1);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail.rfind("locked memory 64.0 KiB (hard 64.0 KiB), no RDMA device; ", 0), 0u)
      << r.detail;
  EXPECT_EQ(r.values.at("memlock_bytes"), 64 * 1024);
}

TEST(LimitsTest, LimitedLockedMemoryWithRdmaWarns) {
  LimitsFacts f = generous();
  f.memlockSoft = 64 * kKiB;
  f.rdmaDevices = {"mlx5_0", "mlx5_1"};
  CheckResult r = judgeLimits(f, 1, 1);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "locked memory 64.0 KiB (hard unlimited) with RDMA devices mlx5_0, mlx5_1: NCCL, "
            "RCCL and UCX pin their buffers and need it unlimited");
  EXPECT_EQ(r.fix,
            "run `ulimit -l unlimited` before distrun (in the batch script), or srun "
            "--propagate=NONE");
  f.memlockHard = 64 * kKiB;
  r = judgeLimits(f, 1, 1);
  EXPECT_EQ(r.fix,
            "srun --propagate=NONE, so that the node's own limits apply rather than the login "
            "node's; else ask the admins for memlock unlimited (limits.conf, slurm.conf "
            "PropagateResourceLimitsExcept=MEMLOCK)");
}

TEST(LimitsTest, UnlimitedLockedMemoryWithRdmaPasses) {
  LimitsFacts f = generous();
  f.rdmaDevices = {"cxi0"};
  CheckResult r = judgeLimits(f, 1, 1);
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail.rfind("locked memory unlimited (hard unlimited) with RDMA devices cxi0; ", 0),
            0u)
      << r.detail;
}

TEST(LimitsTest, AHardOpenFilesLimitBelowTheNeedFails) {
  LimitsFacts f;
  f.nofileSoft = f.nofileHard = 4096;
  CheckResult r = judgeLimits(f, 1000, 8);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "open files 4096 (hard 4096), 10511 wanted for 1000 nodes x 8 ranks");
  EXPECT_EQ(r.fix,
            "ask the admins to raise the hard limit on open files to 10511 or more (limits.conf "
            "nofile, or slurm.conf PropagateResourceLimitsExcept=NOFILE)");
}

TEST(LimitsTest, ALowSoftOpenFilesLimitWarns) {
  LimitsFacts f;
  f.nofileSoft = 1024;
  f.nofileHard = 1048576;
  CheckResult r = judgeLimits(f, 100, 8);
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "open files 1024 (hard 1048576), 1511 wanted for 100 nodes x 8 ranks: distrun run "
            "raises the soft limit to the hard one, other launchers do not");
  EXPECT_EQ(r.fix, "run `ulimit -n 1048576` before the launcher");
}

TEST(LimitsTest, ReadsThisProcesssLimitsAndTheRdmaFolders) {
  FakeTree tree;
  tree.makeFolder("/sys/class/infiniband/mlx5_0");
  tree.makeFolder("/sys/class/cxi/cxi0");
  LimitsFacts f = readLimits(tree.root());
  EXPECT_EQ(f.rdmaDevices, (std::vector<std::string>{"mlx5_0", "cxi0"}));
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur != RLIM_INFINITY) {
    EXPECT_EQ(f.nofileSoft, files.rlim_cur);
  }
  EXPECT_TRUE(readLimits(FakeTree().root()).rdmaDevices.empty());
}

TEST(LimitsTest, RunsOnThisMachine) {
  CheckResult r = checkLimits(ProbeContext{});
  EXPECT_EQ(r.check, "limits");
  EXPECT_GT(r.values.at("open_files_wanted"), 0);
  EXPECT_NE(r.detail.find("open files "), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace distrun::doctor
