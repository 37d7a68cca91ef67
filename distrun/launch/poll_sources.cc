#include "distrun/launch/poll_sources.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "distrun/common/error.h"

namespace distrun::launch {

namespace {

constexpr int kHandledSignals[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

}  // namespace

SignalReader::SignalReader() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kHandledSignals) sigaddset(&set, s);
  if (::pthread_sigmask(SIG_BLOCK, &set, &previous_) != 0) {
    throw SystemError("pthread_sigmask", "SIG_BLOCK", errno);
  }
  fd_.reset(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) {
    int e = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    throw SystemError("signalfd", "agent signals", e);
  }
}

void blockWarningSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
    throw SystemError("pthread_sigmask", "SIGUSR1 SIGUSR2", errno);
  }
}

SignalReader::~SignalReader() {
  fd_.reset();
  sigaddset(&previous_, SIGUSR1);
  sigaddset(&previous_, SIGUSR2);
  ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::vector<int> SignalReader::read() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (::read(fd_.get(), &info, sizeof(info)) == sizeof(info)) {
    out.push_back(static_cast<int>(info.ssi_signo));
  }
  return out;
}

EventFd::EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (!fd_) throw SystemError("eventfd", "agent events", errno);
}

void EventFd::notify() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd_.get(), &one, sizeof(one));
}

void EventFd::drain() {
  uint64_t n;
  [[maybe_unused]] ssize_t r = ::read(fd_.get(), &n, sizeof(n));
}

}  // namespace distrun::launch
