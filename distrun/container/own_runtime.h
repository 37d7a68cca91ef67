#pragma once

// distrun's own container runtime: the image mounted once per node
// (node_mount.h, image_mount.h), each program entered with bubblewrap
// (runtime_command.h) between the two halves of distrun-sandbox
// (sandbox_process.h). Made by ContainerSession::open.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/environment.h"
#include "distrun/container/container_session.h"
#include "distrun/container/image_file.h"
#include "distrun/container/image_mount.h"
#include "distrun/container/node_mount.h"
#include "distrun/container/runtime_command.h"

namespace distrun::container {

// distrun-sandbox beside this process's executable (bin/ in the build tree
// and once installed). Throws ConfigError when it is not there.
std::string sandboxToolPath();

// The folder name of an image's node mount: its identity, and the Slurm job
// step when there is one (a FUSE daemon belongs to the step that started
// it, and Slurm ends it with that step).
std::string mountKey(const ImageFile& image, const Environment& env);

// The host path a program inside sees at `pathInImage`: under one of
// `mounts`, the mount's source; else in the image at `imageRoot`, its
// symbolic links followed inside the image.
std::string hostPathOf(const std::string& pathInImage, const std::string& imageRoot,
                       const std::vector<SandboxMount>& mounts);

class OwnRuntimeSession : public ContainerSession {
 public:
  OwnRuntimeSession(const ContainerRequest& request, const ImageFile& image, const Runtime& runtime,
                    const Environment& env);
  std::vector<std::string> command(const std::vector<std::string>& program,
                                   const std::string& workingDir) const override;
  DirectCommand directCommand(const std::vector<std::string>& program,
                              const std::string& workingDir) const override;
  std::string describe() const override;
  std::optional<std::string> hostPath(const std::string& pathInImage) const override;

 private:
  ImageFile image_;
  HostMountFolder folder_;
  std::unique_ptr<NodeMount> mount_;
  SandboxSpec spec_;
  std::string workingDir_;  // at open(), for hostPath
};

}  // namespace distrun::container
