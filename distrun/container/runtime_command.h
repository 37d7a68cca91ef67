#pragma once

// Which runtime enters the container, and the command line each one gets:
// pure functions of their inputs, unit-tested without the runtimes.
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/container/container_request.h"
#include "distrun/container/mount_plan.h"

namespace distrun::container {

// The variable every program started in a container gets: the image's
// absolute path (wrappers read it to avoid entering a container twice).
inline constexpr const char* kContainerVariable = "DISTRUN_CONTAINER";

// Where distrun-sandbox is inside the container.
inline constexpr const char* kSandboxToolInside = "/.distrun/distrun-sandbox";

// The first executable regular file named `name` in the folders of `path`
// (PATH's syntax; an empty entry is the working directory); nullopt if none.
std::optional<std::string> findOnPath(const std::string& name, const std::string& path);

// The runtime that will run the container, and its executable.
struct Runtime {
  RuntimeChoice kind = RuntimeChoice::kDistrun;  // never kAuto
  std::string executable;                        // apptainer, singularity, or bwrap
};

// --container-runtime resolved against env's PATH: auto takes apptainer,
// else singularity, else distrun's own (bwrap). Throws ConfigError when
// the runtime asked for is not on PATH, or bwrap is missing for distrun's
// (naming the Debian package bubblewrap).
Runtime chooseRuntime(RuntimeChoice choice, const Environment& env);

// A bind as the runtimes need it: whether the host source is a file.
struct HostBind {
  Bind bind;
  bool isFile = false;
};

// Everything bwrapCommand needs besides the program, gathered once by
// ContainerSession::open.
struct SandboxSpec {
  std::string bwrap;                   // host path of bwrap
  std::string sandboxTool;             // host path of distrun-sandbox
  std::string imageRoot;               // host path of the mounted or unpacked image
  std::string image;                   // the image file (kContainerVariable)
  std::vector<HostBind> binds;         // the request's, in order
  std::string home;                    // $HOME; "" when unset
  std::string tmpdir;                  // $TMPDIR; "" when unset
  std::vector<std::string> hostFiles;  // /etc/hosts and friends that exist on the host
  bool envScripts = false;             // the image has /.singularity.d/env/*.sh and /bin/sh
};

// The mounts every worker gets, in order: the host's /dev (GPUs, /dev/shm,
// network devices), /proc, /sys (read-only), /tmp, $TMPDIR, $HOME, the
// host's /etc/hosts, resolv.conf, passwd and group over the image's, the
// working directory, distrun-sandbox, then the binds. A path already inside
// an earlier mount at its own path (the working directory under $HOME) is
// not mounted again.
std::vector<SandboxMount> sandboxMounts(const SandboxSpec& spec, const std::string& workingDir);

// argv for a worker entering the container: distrun-sandbox supervise,
// bwrap building the tree (planMounts) with the root read-only, the working
// directory, kContainerVariable, then distrun-sandbox start and `program`,
// through /bin/sh sourcing the image's environment scripts when it has them.
// Throws ConfigError as planMounts does.
std::vector<std::string> sandboxCommand(const SandboxSpec& spec, const ImageTree& image,
                                        const std::vector<std::string>& program,
                                        const std::string& workingDir);

// The part of sandboxCommand after `distrun-sandbox supervise --`: bwrap's
// command line, for a caller that supervises the child itself.
std::vector<std::string> bwrapCommand(const SandboxSpec& spec, const ImageTree& image,
                                      const std::vector<std::string>& program,
                                      const std::string& workingDir);

// Apptainer's or Singularity's `exec`, which mounts and enters the image
// itself (and forwards signals).
struct SiteRuntimeSpec {
  std::string executable;
  std::string image;
  std::vector<Bind> binds;
  bool nvidia = false;  // /dev/nvidia0 exists: --nv
  bool rocm = false;    // /dev/kfd exists: --rocm
};

// `EXE exec --bind SRC:DST[:ro]... [--nv] [--rocm] --pwd DIR
//  --env DISTRUN_CONTAINER=IMAGE IMAGE PROGRAM...`
std::vector<std::string> siteRuntimeCommand(const SiteRuntimeSpec& spec,
                                            const std::vector<std::string>& program,
                                            const std::string& workingDir);

}  // namespace distrun::container
