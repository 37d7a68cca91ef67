#include "distrun/container/container_session.h"

#include <unistd.h>

#include <system_error>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/container/image_file.h"
#include "distrun/container/own_runtime.h"
#include "distrun/container/sandbox_process.h"

namespace distrun::container {

namespace {

// Apptainer or Singularity: `exec` mounts the image and enters it for each
// program, and forwards signals to it.
class SiteRuntimeSession : public ContainerSession {
 public:
  SiteRuntimeSession(const ContainerRequest& request, const ImageFile& image,
                     const Runtime& runtime)
      : format_(image.format), name_(runtimeName(runtime.kind)) {
    spec_.executable = runtime.executable;
    spec_.image = image.path;
    spec_.binds = request.binds;
    spec_.nvidia = ::access("/dev/nvidia0", F_OK) == 0;
    spec_.rocm = ::access("/dev/kfd", F_OK) == 0;
  }
  std::vector<std::string> command(const std::vector<std::string>& program,
                                   const std::string& workingDir) const override {
    return siteRuntimeCommand(spec_, program, workingDir);
  }
  DirectCommand directCommand(const std::vector<std::string>& program,
                              const std::string& workingDir) const override {
    return {command(program, workingDir), false};
  }
  std::string describe() const override {
    return fmt::format("container {} ({}): {} ({}) mounts and enters it for each program{}{}",
                       spec_.image, formatName(format_), name_, spec_.executable,
                       spec_.nvidia ? ", --nv" : "", spec_.rocm ? ", --rocm" : "");
  }

 private:
  ImageFormat format_;
  std::string name_;
  SiteRuntimeSpec spec_;
};

}  // namespace

std::unique_ptr<ContainerSession> ContainerSession::open(const ContainerRequest& request,
                                                         const Environment& env) {
  ImageFile image = openImage(request.image);
  Runtime runtime = chooseRuntime(request.runtime, env);
  if (runtime.kind == RuntimeChoice::kDistrun) {
    return std::make_unique<OwnRuntimeSession>(request, image, runtime, env);
  }
  return std::make_unique<SiteRuntimeSession>(request, image, runtime);
}

int runInContainer(const ContainerSession& session, const std::vector<std::string>& program,
                   const std::string& workingDir) {
  ContainerSession::DirectCommand direct = session.directCommand(program, workingDir);
  try {
    return shellStatus(superviseChild(direct.argv, direct.statusPipe));
  } catch (const std::system_error& e) {
    throw SystemError(ExitCode::kSystem,
                      fmt::format("cannot start {}: {}", direct.argv.front(), e.what()));
  }
}

int cleanStaleMounts(const Environment& env) {
  try {
    HostMountFolder folder(env.getOr("PATH", "/usr/bin:/bin"));
    return cleanStaleMounts(nodeMountBase(env), folder);
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace distrun::container
