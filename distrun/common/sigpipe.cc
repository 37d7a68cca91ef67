#include "distrun/common/sigpipe.h"

#include <signal.h>

#include <cerrno>
#include <mutex>

#include "distrun/common/error.h"

namespace distrun {

void ignoreSigpipe() {
  static std::mutex mutex;  // two threads must not both see SIG_DFL and race
  std::lock_guard lock(mutex);
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0) {
    throw SystemError("sigaction", "SIGPIPE", errno);
  }
  if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  if (::sigaction(SIGPIPE, &ignore, nullptr) != 0) {
    throw SystemError("sigaction", "SIGPIPE", errno);
  }
}

}  // namespace distrun
