#include <fmt/format.h>

#include "distrun/cli/commands.h"
#include "distrun/cli/container_flags.h"
#include "distrun/cli/container_launch.h"
#include "distrun/cli/flag_check.h"
#include "distrun/common/error.h"

namespace distrun::cli {

namespace {

struct EnterOptions {
  ContainerFlags container;
  std::optional<std::string> site;
  bool verbose = false;
};

// IMAGE, then PROGRAM [ARGS...], after an optional -- (which PROGRAM's own
// arguments may hold again, as apptainer exec passes them on).
std::vector<std::string> splitImage(std::vector<std::string> rest,
                                    std::optional<std::string>& image) {
  if (rest.empty() || rest.front() == "--") {
    throw UsageError("enter: no IMAGE given: distrun enter [OPTIONS] IMAGE -- PROGRAM [ARGS...]");
  }
  image = rest.front();
  rest.erase(rest.begin());
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  if (rest.empty()) {
    throw UsageError(
        fmt::format("enter: no PROGRAM given to run in {}: distrun enter "
                    "[OPTIONS] IMAGE -- PROGRAM [ARGS...]",
                    *image));
  }
  return rest;
}

}  // namespace

Action addEnterCommand(CLI::App& app, CliContext& ctx) {
  auto options = std::make_shared<EnterOptions>();
  CLI::App* cmd = app.add_subcommand(
      "enter",
      "Run PROGRAM inside the container IMAGE with this environment, as apptainer exec does "
      "(the wrappers of distrun wrap call it)");
  addBindFlags(cmd, options->container);
  cmd->add_option("--site", options->site, "site profile NAME whose binds apply, or 'none'");
  cmd->add_flag("-v,--verbose", options->verbose, "print the runtime and the mount first");
  cmd->prefix_command();
  cmd->footer("IMAGE -- PROGRAM [ARGS...]");
  return [options, cmd, &ctx] {
    std::vector<std::string> argv = splitImage(programArguments(*cmd), options->container.image);
    std::optional<container::ContainerRequest> request =
        containerRequest(options->container, options->site, ctx.env, ctx);
    return runInContainer(ctx, *request, argv, {}, options->verbose);
  };
}

}  // namespace distrun::cli
