#pragma once

// --container, --bind and --container-runtime: the flags of run, exec,
// train, bench, submit and enter that put the workers in a container
// image, and the checks made of them before anything starts.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "distrun/cli/cli.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/container/container_request.h"

namespace distrun::cli {

using container::ContainerFlags;

void addContainerFlags(CLI::App* cmd, ContainerFlags& flags);
// --bind and --container-runtime alone: `distrun enter` takes IMAGE as its
// first argument instead of --container.
void addBindFlags(CLI::App* cmd, ContainerFlags& flags);

// The container the flags ask for, checked before anything starts: the
// image opens (container::openImage: ImageError, exit 66 or 65), every
// --bind parses and its source exists (UsageError), the runtime is one of
// four. The binds of the site profile `siteName` selects (--site; unset:
// the detected one, see cluster::selectSiteProfile), looked for only when
// there is an image, follow the user's, dropped where their source is
// missing on this node; distrun's own folder ctx.toolDir is bound
// read-only at its own path, so distrun-train and distrun-bench run inside.
// nullopt without --container; UsageError for --bind or
// --container-runtime without it.
std::optional<container::ContainerRequest> containerRequest(
    const ContainerFlags& flags, const std::optional<std::string>& siteName, const Environment& env,
    const CliContext& ctx);

// The flags again, the image's path made absolute, for a command distrun
// writes for later (submit's batch script). Empty without --container.
std::vector<std::string> containerArguments(const ContainerFlags& flags);

// Takes the container flags out of `args` (distrun bench passes everything
// else on to distrun-bench unparsed). UsageError for a flag without value.
ContainerFlags takeContainerFlags(std::vector<std::string>& args);

}  // namespace distrun::cli
