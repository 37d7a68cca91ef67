#pragma once

// The workers' program, found before anything starts: a program that
// cannot be run is one line and exit 127/126 from the agent, not one
// "cannot run" per worker after the job has formed.
#include <optional>
#include <string>

#include "distrun/launch/agent_config.h"

namespace distrun::launch {

// Finds config.program[0] as the workers' exec will (execvpe): a name
// without '/' in the folders of `pathVariable` ("/bin:/usr/bin" when
// unset), a path with '/' against `workingDir` (the workers' folder). For
// a Python program the interpreter is replaced by the path found (in
// program[0] and config.python), so that -v and the failure report name
// the Python that runs, and its script must exist. Throws SystemError with
// ExitCode::kNotFound or kNotExecutable naming the program ("did you mean
// ./w.sh?" when a name not on PATH is a file of `workingDir`) or, for the
// interpreter, where it came from and how to choose another.
void locateProgram(AgentConfig& config, const std::optional<std::string>& pathVariable,
                   const std::string& workingDir);

// The line -v prints before the workers start: their command, and for a
// Python program which Python and where it came from.
std::string describeProgram(const AgentConfig& config);

}  // namespace distrun::launch
