#include "distrun/common/sigpipe.h"

#include <signal.h>
#include <unistd.h>

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

ssize_t writeWithoutSigpipe(int fd, const void* data, size_t size) {
  sigset_t pipe, old, pending;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe, &old);
  sigpending(&pending);
  bool alreadyPending = sigismember(&pending, SIGPIPE) == 1;
  ssize_t n = ::write(fd, data, size);
  int error = errno;
  if (n < 0 && error == EPIPE && !alreadyPending) {
    timespec now{0, 0};
    ::sigtimedwait(&pipe, nullptr, &now);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return n;
}

}  // namespace distrun
