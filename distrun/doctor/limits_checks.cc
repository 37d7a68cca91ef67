#include "distrun/doctor/limits_checks.h"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "distrun/common/strings.h"
#include "distrun/common/unique_fd.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/node_facts.h"

namespace distrun::doctor {
namespace {

namespace fs = std::filesystem;

std::string tryCreating(const std::string& folder) {
  std::string name = folder + "/.distrun-doctor.XXXXXX";
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  UniqueFd fd(::mkstemp(buffer.data()));
  // error_code's message, not strerror: the checks run in threads at once.
  if (!fd) return std::error_code(errno, std::generic_category()).message();
  ::unlink(buffer.data());
  return "";
}

// What the user is told for one folder: its name in the detail, and what
// to do when it is missing, short of room, or refuses a file for another
// reason (permissions, a read-only or pseudo file system).
struct FolderWords {
  std::string check;
  std::string label;  // "$TMPDIR /scratch/tmp"
  std::string missingFix;
  std::string spaceFix;
  std::string writeFix;
};

// A file the folder refused: for want of room (ENOSPC, EDQUOT), or else.
bool outOfRoom(const std::string& createError) {
  return createError == std::error_code(ENOSPC, std::generic_category()).message() ||
         createError == std::error_code(EDQUOT, std::generic_category()).message();
}

CheckResult judgeFolder(const FolderFacts& f, const SpaceNeed& need, const FolderWords& w) {
  if (!f.exists) return fail(w.check, w.label + " does not exist", w.missingFix);
  if (!f.isFolder) return fail(w.check, w.label + " is not a folder", w.missingFix);
  if (!f.createError.empty()) {
    return fail(w.check, fmt::format("cannot create a file in {}: {}", w.label, f.createError),
                outOfRoom(f.createError) ? w.spaceFix : w.writeFix);
  }
  if (!f.freeBytes) return ok(w.check, w.label + " is writable; its free space is unknown");
  std::string has = fmt::format("{} has {} free", w.label, formatBytes(*f.freeBytes));
  if (f.totalBytes) has += " of " + formatBytes(*f.totalBytes);
  CheckResult result = ok(w.check, has);
  if (*f.freeBytes < need.failBelow) {
    result =
        fail(w.check, has + "; at least " + formatBytes(need.failBelow) + " wanted", w.spaceFix);
  } else if (*f.freeBytes < need.warnBelow) {
    result = warn(w.check, has + "; " + formatBytes(need.warnBelow) + " or more recommended",
                  w.spaceFix);
  }
  result.values["free_bytes"] = static_cast<double>(*f.freeBytes);
  if (f.totalBytes) result.values["total_bytes"] = static_cast<double>(*f.totalBytes);
  result.facts["folder"] = f.path;
  return result;
}

std::optional<uint64_t> finite(rlim_t value) {
  if (value == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(value);
}

std::string limitText(const std::optional<uint64_t>& value, bool bytes) {
  if (!value) return "unlimited";
  return bytes ? formatBytes(*value) : std::to_string(*value);
}

Finding memlockFinding(const LimitsFacts& f) {
  std::string limit = fmt::format("locked memory {} (hard {})", limitText(f.memlockSoft, true),
                                  limitText(f.memlockHard, true));
  if (f.rdmaDevices.empty()) return {CheckState::kOk, limit + ", no RDMA device", ""};
  std::string devices = join(f.rdmaDevices, ", ");
  if (!f.memlockSoft) return {CheckState::kOk, limit + " with RDMA devices " + devices, ""};
  std::string fix =
      f.memlockHard
          ? "srun --propagate=NONE, so that the node's own limits apply rather than the login "
            "node's; else ask the admins for memlock unlimited (limits.conf, slurm.conf "
            "PropagateResourceLimitsExcept=MEMLOCK)"
          : "run `ulimit -l unlimited` before distrun (in the batch script), or srun "
            "--propagate=NONE";
  return {CheckState::kWarn,
          fmt::format("{} with RDMA devices {}: NCCL, RCCL and UCX pin their buffers and need "
                      "it unlimited",
                      limit, devices),
          fix};
}

Finding nofileFinding(const LimitsFacts& f, int nodes, int ranksPerNode) {
  uint64_t need = openFilesNeeded(nodes, ranksPerNode);
  std::string limit = fmt::format("open files {} (hard {}), {} wanted for {} x {}",
                                  limitText(f.nofileSoft, false), limitText(f.nofileHard, false),
                                  need, counted(static_cast<uint64_t>(nodes), "node"),
                                  counted(static_cast<uint64_t>(ranksPerNode), "rank"));
  if (f.nofileHard && *f.nofileHard < need) {
    return {CheckState::kFail, limit,
            fmt::format("ask the admins to raise the hard limit on open files to {} or more "
                        "(limits.conf nofile, or slurm.conf PropagateResourceLimitsExcept=NOFILE)",
                        need)};
  }
  if (f.nofileSoft && *f.nofileSoft < need) {
    return {CheckState::kWarn,
            limit + ": distrun run raises the soft limit to the hard one, other launchers do not",
            "run `ulimit -n " + limitText(f.nofileHard, false) + "` before the launcher"};
  }
  return {CheckState::kOk, limit, ""};
}

std::vector<std::string> entriesOf(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

FolderFacts readFolder(const std::string& path) {
  FolderFacts f;
  f.path = path;
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  f.exists = status.type() != fs::file_type::not_found && status.type() != fs::file_type::none;
  f.isFolder = status.type() == fs::file_type::directory;
  if (!f.isFolder) return f;
  f.createError = tryCreating(path);
  struct statvfs info {};
  if (::statvfs(path.c_str(), &info) == 0) {
    f.freeBytes = static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
    f.totalBytes = static_cast<uint64_t>(info.f_blocks) * info.f_frsize;
  }
  return f;
}

CheckResult judgeSharedMemory(const FolderFacts& shm) {
  return judgeFolder(
      shm, kShmNeed,
      {"shm", shm.path,
       "mount a tmpfs on /dev/shm (a container needs the host's: docker run --ipc=host or "
       "--shm-size=16g; apptainer binds it)",
       "give /dev/shm more room (docker run --shm-size=16g, or --ipc=host) or remove what earlier "
       "jobs left in it",
       "/dev/shm must be writable by every user (mode 1777): ask the admins"});
}

CheckResult judgeTmpdir(const FolderFacts& tmp, bool fromVariable) {
  std::string label = fromVariable ? "$TMPDIR " + tmp.path : tmp.path + " ($TMPDIR unset)";
  std::string missing =
      fromVariable ? fmt::format("mkdir -p {}, or export TMPDIR=FOLDER that exists", tmp.path)
                   : "export TMPDIR=FOLDER, a node-local folder with room";
  return judgeFolder(tmp, kFolderNeed,
                     {"tmpdir", label, missing,
                      "export TMPDIR=FOLDER on a node-local disk with room (a folder of your own "
                      "on the node's scratch), or free space in " +
                          tmp.path,
                      "export TMPDIR=FOLDER, a node-local folder you can write to"});
}

SnapshotFacts readSnapshotFacts(const std::optional<std::string>& snapshot) {
  SnapshotFacts s;
  if (!snapshot || snapshot->empty()) return s;
  s.snapshot = *snapshot;
  s.folder = fs::path(*snapshot).parent_path().string();
  if (s.folder.empty()) s.folder = ".";
  s.facts = readFolder(s.folder);
  return s;
}

CheckResult judgeSnapshotDir(const SnapshotFacts& s) {
  if (s.snapshot.empty()) return skip("snapshot-dir", "no --snapshot given");
  std::string label = fmt::format("the folder {} of --snapshot {}", s.folder, s.snapshot);
  if (!s.facts.exists) {
    return fail("snapshot-dir", label + " does not exist (distrun train does not create it)",
                fmt::format("mkdir -p {}", s.folder));
  }
  return judgeFolder(s.facts, kFolderNeed,
                     {"snapshot-dir", label, "choose --snapshot in a folder",
                      fmt::format("free space in {} or choose --snapshot in a folder with room "
                                  "(a project or scratch file system)",
                                  s.folder),
                      "choose --snapshot in a folder you can write to (a project or scratch "
                      "file system)"});
}

LimitsFacts readLimits(const std::string& root) {
  LimitsFacts f;
  rlimit limit{};
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
    f.memlockSoft = finite(limit.rlim_cur);
    f.memlockHard = finite(limit.rlim_max);
  }
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    f.nofileSoft = finite(limit.rlim_cur);
    f.nofileHard = finite(limit.rlim_max);
  }
  for (const char* folder : {"/sys/class/infiniband", "/sys/class/cxi"}) {
    for (const std::string& name : entriesOf(root + folder)) f.rdmaDevices.push_back(name);
  }
  return f;
}

uint64_t openFilesNeeded(int nodes, int ranksPerNode) {
  uint64_t n = static_cast<uint64_t>(std::max(nodes, 1));
  uint64_t ranks = n * static_cast<uint64_t>(std::max(ranksPerNode, 1));
  return 2 * n + (ranks - 1) + 512;
}

CheckResult judgeLimits(const LimitsFacts& f, int nodes, int ranksPerNode) {
  CheckResult result =
      combine("limits", {memlockFinding(f), nofileFinding(f, nodes, ranksPerNode)});
  if (f.memlockSoft) result.values["memlock_bytes"] = static_cast<double>(*f.memlockSoft);
  if (f.nofileSoft) result.values["open_files"] = static_cast<double>(*f.nofileSoft);
  if (f.nofileHard) result.values["open_files_hard"] = static_cast<double>(*f.nofileHard);
  result.values["open_files_wanted"] = static_cast<double>(openFilesNeeded(nodes, ranksPerNode));
  return result;
}

CheckResult checkSharedMemory(const ProbeContext&) {
  return judgeSharedMemory(readFolder("/dev/shm"));
}

CheckResult checkTmpdir(const ProbeContext& ctx) {
  std::optional<std::string> tmpdir = ctx.env.get("TMPDIR");
  bool fromVariable = tmpdir && !tmpdir->empty();
  return judgeTmpdir(readFolder(fromVariable ? *tmpdir : "/tmp"), fromVariable);
}

CheckResult checkSnapshotDir(const ProbeContext& ctx) {
  return judgeSnapshotDir(readSnapshotFacts(ctx.options.snapshot));
}

CheckResult checkLimits(const ProbeContext& ctx) {
  // Without --nproc-per-node or several tasks per node, a GPU node's 8.
  RanksPerNode ranks = ranksPerNode(ctx.options, ctx.layout, 8);
  return judgeLimits(readLimits(""), ctx.layout.numNodes, ranks.ranks);
}

}  // namespace distrun::doctor
