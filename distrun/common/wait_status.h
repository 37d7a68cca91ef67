#pragma once

#include <sys/wait.h>

namespace distrun {

// A wait status as a shell reports it: the exit code, or 128+N when signal
// N killed the process (255 for a status that is neither). Header-only: the
// static distrun-sandbox uses it too (container/sandbox_process.h).
inline int shellStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 255;
}

}  // namespace distrun
