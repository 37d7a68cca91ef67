#pragma once

// Running programs inside a container image (--container): the runtime
// chosen, the image mounted once per node, each program entered into it.
// See docs/containers.md, "Running in a container".
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/container/container_request.h"

namespace distrun::container {

// One per distrun process that starts programs in a container. With
// distrun's own runtime it holds this process's share of the node's mount
// of the image (container/node_mount.h) from open() to its destruction; with
// Apptainer or Singularity the runtime mounts for each program itself.
// Const methods are thread-safe.
class ContainerSession {
 public:
  // Chooses the runtime (request.runtime; auto: apptainer on env's PATH,
  // else singularity, else distrun's own), checks the image (openImage),
  // and for distrun's own runtime clears the node's stale mounts and joins
  // this node's mount of the image, mounting it if no one has. Throws
  // ImageError (exit 66 missing, 65 not an image), ConfigError (a runtime
  // asked for is not on PATH; bwrap or distrun-sandbox missing, naming the
  // Debian package; a bind the image cannot take; DISTRUN_CONTAINER_MOUNT
  // wrong), SystemError (the mount failed: each way tried, and why).
  static std::unique_ptr<ContainerSession> open(const ContainerRequest& request,
                                                const Environment& env);
  // Leaves the node's mount; the last user unmounts it.
  virtual ~ContainerSession() = default;
  ContainerSession(const ContainerSession&) = delete;
  ContainerSession& operator=(const ContainerSession&) = delete;

  // argv that runs `program` inside the container in `workingDir`, for a
  // worker the agent forks: its environment passes through, with
  // DISTRUN_CONTAINER=<image path> added; signals sent to its process group
  // reach the program, and it ends as the program ended (killed by the same
  // signal, or with the same code). Throws ConfigError when a bind or the
  // working directory cannot be placed in the image.
  virtual std::vector<std::string> command(const std::vector<std::string>& program,
                                           const std::string& workingDir) const = 0;

  // What a caller that supervises the child itself (runInContainer) runs:
  // for distrun's runtime bwrap's command line without distrun-sandbox
  // supervise around it, with `statusPipe` (see sandbox_process.h).
  struct DirectCommand {
    std::vector<std::string> argv;
    bool statusPipe = false;
  };
  virtual DirectCommand directCommand(const std::vector<std::string>& program,
                                      const std::string& workingDir) const = 0;

  // One line for -v: the runtime, the image, how and where it is mounted
  // ("squashfuse_ll at /tmp/distrun-0/containers/.../root").
  virtual std::string describe() const = 0;

  // The host path of `pathInImage` as a program inside would see it (the
  // image's symbolic links followed inside the image; under a bind, the
  // bound host path) for distrun's runtime; nullopt for a runtime whose
  // mount distrun cannot see.
  virtual std::optional<std::string> hostPath(const std::string& pathInImage) const {
    (void)pathInImage;
    return std::nullopt;
  }

 protected:
  ContainerSession() = default;
};

// For `distrun exec --container` and `distrun enter`: runs
// session.directCommand(program) as a child, forwarding TERM INT HUP QUIT
// USR1 USR2 to it (and the terminal, when this process has it), waits, and
// returns its status as a shell does (128+N when signal N killed the
// program). Throws SystemError when it cannot be started.
int runInContainer(const ContainerSession& session, const std::vector<std::string>& program,
                   const std::string& workingDir);

// This user's node mounts that no live process uses (left by a process
// killed with SIGKILL), unmounted and removed; open() calls it. Returns how
// many. Never throws.
int cleanStaleMounts(const Environment& env);

}  // namespace distrun::container
