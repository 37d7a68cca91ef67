#pragma once

#include <optional>

#include "distrun/common/environment.h"

namespace distrun {

// A worker's progress reports to its agent (`distrun run --hang-timeout`;
// docs/launcher.md, "Hung workers"): the agent gives each worker a pipe
// and names its descriptor in DISTRUN_PROGRESS_FD; one byte written there
// per step tells the agent the worker is not hung, even when it burns no
// CPU time and writes no output for a while. Once a worker has reported,
// only its reports count as its progress.

// The descriptor DISTRUN_PROGRESS_FD names in `env`; nullopt when it is
// absent or not a descriptor number.
std::optional<int> progressFdFrom(const Environment& env);

// Writes one byte to `fd` without blocking. A full pipe or a closed one is
// ignored: a report is a hint, never a reason for the worker to wait or fail.
void reportProgressTo(int fd);

// One report on the descriptor this process's DISTRUN_PROGRESS_FD names (read
// once); nothing when it names none. Thread-safe.
void reportProgress();

}  // namespace distrun
