#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distrun/doctor/check_result.h"

// Private to distrun/doctor: the facts, readers and judges of the "shm",
// "limits", "tmpdir" and "snapshot-dir" checks (docs/doctor.md, "The
// node's system").

namespace distrun::doctor {

// A folder that something needs room in.
struct FolderFacts {
  std::string path;
  bool exists = false;
  bool isFolder = false;
  // Why no file could be created in it (strerror); empty when one was
  // created and removed again. Trying is what proves writability: root
  // ignores mode bits, and a read-only mount shows only when one writes.
  std::string createError;
  std::optional<uint64_t> freeBytes;   // statvfs f_bavail x f_frsize: what a user may fill
  std::optional<uint64_t> totalBytes;  // f_blocks x f_frsize
};

// Reads `path`: whether it is a folder, tries creating a file in it, and its
// file system's space. Never throws.
FolderFacts readFolder(const std::string& path);

// Free space below `failBelow` fails, below `warnBelow` warns.
struct SpaceNeed {
  uint64_t failBelow = 0;
  uint64_t warnBelow = 0;
};
// /dev/shm: PyTorch's DataLoader workers pass batches through it, Gloo and
// NCCL put intra-node buffers in it; Docker's default 64 MiB breaks both.
inline constexpr SpaceNeed kShmNeed{256ull << 20, 1ull << 30};
// $TMPDIR and the snapshot folder: compiler caches (MIOpen, Triton, torch
// inductor), extracted containers and snapshots run to gigabytes.
inline constexpr SpaceNeed kFolderNeed{1ull << 30, 10ull << 30};

// "shm": fails when /dev/shm is missing, not a folder or not writable, or
// has less than kShmNeed.failBelow free; warns below kShmNeed.warnBelow.
CheckResult judgeSharedMemory(const FolderFacts& shm);

// "tmpdir": the same for $TMPDIR with kFolderNeed. `fromVariable`: the
// path is $TMPDIR's; else it is /tmp, where TMPDIR is unset.
CheckResult judgeTmpdir(const FolderFacts& tmp, bool fromVariable);

// The snapshot's folder and, when it does not exist, the nearest existing
// folder above it.
struct SnapshotFacts {
  std::string snapshot;  // --snapshot PATH; empty: not given
  std::string folder;    // PATH's folder ("." for a bare name)
  FolderFacts facts;     // of `folder` (exists false when missing)
};
SnapshotFacts readSnapshotFacts(const std::optional<std::string>& snapshot);

// "snapshot-dir": skip without --snapshot; fail when the folder is missing
// (distrun train does not make it) or not writable, or has less than
// kFolderNeed.failBelow free; warn below kFolderNeed.warnBelow.
CheckResult judgeSnapshotDir(const SnapshotFacts& snapshot);

// The process's resource limits that training hits, and the RDMA devices
// that make locked memory matter. nullopt: unlimited.
struct LimitsFacts {
  std::optional<uint64_t> memlockSoft, memlockHard;  // bytes
  std::optional<uint64_t> nofileSoft, nofileHard;    // descriptors
  // Entries of /sys/class/infiniband and /sys/class/cxi (Slingshot).
  std::vector<std::string> rdmaDevices;
};
// getrlimit and the RDMA device folders under `root` ("" for this machine).
LimitsFacts readLimits(const std::string& root);

// The open files one process of the job may need: rank 0's store holds two
// connections per node, each rank opens a socket to every other rank
// (Gloo's full mesh), plus a margin of 512 for libraries, data files and
// NCCL's own sockets.
uint64_t openFilesNeeded(int nodes, int ranksPerNode);

// "limits": warns when locked memory is limited on a node with RDMA
// devices (NCCL, RCCL and UCX pin their buffers over InfiniBand and
// Slingshot); fails when the hard open-files limit is below `filesNeeded`
// (for `nodes` x `ranksPerNode` ranks), warns when only the soft one is.
CheckResult judgeLimits(const LimitsFacts& facts, int nodes, int ranksPerNode);

}  // namespace distrun::doctor
