#include "distrun/cli/container_launch.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ostream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/container/container_session.h"

namespace distrun::cli {

namespace {

// A program named by an absolute path must exist in the image (each worker
// would fail to start otherwise). A relative path lies in the working
// directory, bound at its own path; a name is looked up on PATH inside,
// which the image's environment scripts may change: both left to the
// worker. Only distrun's runtime can see into the image beforehand.
void checkProgramInImage(const container::ContainerSession& session,
                         const container::ContainerRequest& request,
                         const std::vector<std::string>& program) {
  const std::string& name = program.at(0);
  if (name.empty() || name.front() != '/') return;
  std::optional<std::string> host = session.hostPath(name);
  struct stat st {};
  if (!host || ::stat(host->c_str(), &st) == 0) return;
  throw SystemError(ExitCode::kNotFound,
                    fmt::format("cannot run '{}': the container image {} has no such file: "
                                "give the program's path inside the image",
                                name, request.image));
}

}  // namespace

std::string workingDirectory() {
  std::string buffer(4096, '\0');
  if (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    throw SystemError("getcwd", "the working directory", errno);
  }
  return buffer.c_str();
}

std::unique_ptr<container::ContainerSession> enterWorkers(
    const container::ContainerRequest& request, launch::AgentConfig& config, const Environment& env,
    bool verbose, std::ostream& err) {
  auto session = container::ContainerSession::open(request, env);
  if (verbose) err << "distrun run: " << session->describe() << "\n";
  checkProgramInImage(*session, request, config.program);
  config.program = session->command(config.program, workingDirectory());
  return session;
}

int runContained(const container::ContainerRequest& request,
                 const std::vector<std::string>& program,
                 const std::vector<std::pair<std::string, std::string>>& variables, bool verbose,
                 std::ostream& err) {
  for (const auto& [name, value] : variables) {
    if (::setenv(name.c_str(), value.c_str(), 1) != 0) throw SystemError("setenv", name, errno);
  }
  auto session = container::ContainerSession::open(request, ProcessEnvironment());
  if (verbose) err << "distrun: " << session->describe() << "\n";
  checkProgramInImage(*session, request, program);
  return container::runInContainer(*session, program, workingDirectory());
}

int runInContainer(CliContext& ctx, const container::ContainerRequest& request,
                   const std::vector<std::string>& program,
                   const std::vector<std::pair<std::string, std::string>>& variables,
                   bool verbose) {
  if (ctx.runContained) return ctx.runContained(request, program, variables, verbose);
  return runContained(request, program, variables, verbose, ctx.err);
}

}  // namespace distrun::cli
