#pragma once

// Starting programs inside a --container: the agent's workers (run,
// train) and one program waited on (exec, enter, bench).
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distrun/cli/cli.h"
#include "distrun/common/environment.h"
#include "distrun/container/container_request.h"
#include "distrun/launch/agent_config.h"

namespace distrun::container {
class ContainerSession;
}  // namespace distrun::container

namespace distrun::cli {

// Opens the container (mounting the image once on this node, or joining
// the node's mount) and makes config.program run inside it; the program is
// looked for in the image where the runtime can see into it. The session
// holds the node's mount until it is destroyed: keep it past the agent.
// -v (`verbose`) prints the runtime and the mount to `err`.
std::unique_ptr<container::ContainerSession> enterWorkers(
    const container::ContainerRequest& request, launch::AgentConfig& config, const Environment& env,
    bool verbose, std::ostream& err);

// Runs `program` inside the container with `variables` added to this
// process's environment, forwarding signals, and returns its status as a
// shell does (128+N when signal N killed it).
int runContained(const container::ContainerRequest& request,
                 const std::vector<std::string>& program,
                 const std::vector<std::pair<std::string, std::string>>& variables, bool verbose,
                 std::ostream& err);

// ctx.runContained when set (tests), else runContained.
int runInContainer(CliContext& ctx, const container::ContainerRequest& request,
                   const std::vector<std::string>& program,
                   const std::vector<std::pair<std::string, std::string>>& variables, bool verbose);

// This process's working directory (SystemError when it is gone).
std::string workingDirectory();

}  // namespace distrun::cli
