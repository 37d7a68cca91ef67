#include "distrun/launch/worker_group.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace distrun::launch {

WorkerGroup::~WorkerGroup() {
  signalAll(SIGKILL);
  for (Member& m : members_) {
    if (m.running) ::waitpid(m.process.pid, nullptr, 0);
    closePipes(m);
  }
}

void WorkerGroup::add(int rank, int localRank, const WorkerSpec& spec,
                      std::unique_ptr<WorkerOutput> output) {
  Member m{rank, localRank, spawnWorker(spec), std::move(output)};
  members_.push_back(std::move(m));
}

void WorkerGroup::addPollFds(std::vector<pollfd>& fds) const {
  for (const Member& m : members_) {
    for (int fd : {m.process.stdoutFd, m.process.stderrFd}) {
      if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
    }
  }
}

void WorkerGroup::pumpOutput(const std::vector<pollfd>& fds) {
  char buffer[65536];
  for (const pollfd& p : fds) {
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    for (Member& m : members_) {
      bool isOut = p.fd == m.process.stdoutFd;
      if (!isOut && p.fd != m.process.stderrFd) continue;
      ssize_t n = ::read(p.fd, buffer, sizeof(buffer));
      if (n > 0) {
        std::string_view bytes(buffer, static_cast<size_t>(n));
        isOut ? m.output->onStdout(bytes) : m.output->onStderr(bytes);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(p.fd);
        (isOut ? m.process.stdoutFd : m.process.stderrFd) = -1;
      }
    }
  }
}

void WorkerGroup::drain(Member& m) {
  std::vector<pollfd> fds;
  for (int fd : {m.process.stdoutFd, m.process.stderrFd}) {
    if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, POLLIN});
  }
  // The worker has exited: what it wrote is in the pipes. Read until they
  // are empty (EAGAIN) or closed; a grandchild holding them open cannot
  // stall the report.
  for (int round = 0; round < 1024 && !fds.empty(); ++round) {
    pumpOutput(fds);
    std::erase_if(fds, [&](const pollfd& p) {
      return p.fd != m.process.stdoutFd && p.fd != m.process.stderrFd;
    });
    if (::poll(fds.data(), fds.size(), 0) <= 0) break;
  }
  m.output->finish();
}

std::vector<WorkerGroup::Member*> WorkerGroup::reap() {
  std::vector<Member*> exited;
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    for (Member& m : members_) {
      if (m.process.pid != pid || !m.running) continue;
      m.running = false;
      if (WIFEXITED(status)) m.exitCode = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) m.signal = WTERMSIG(status);
      // A grandchild may hold the pipes open for ever; what the worker
      // itself wrote is in them now.
      drain(m);
      closePipes(m);
      exited.push_back(&m);
    }
  }
  return exited;
}

void WorkerGroup::signalAll(int signal) {
  for (Member& m : members_) {
    if (m.running) signalWorker(m.process.pid, signal);
  }
}

bool WorkerGroup::allExited() const {
  for (const Member& m : members_) {
    if (m.running) return false;
  }
  return true;
}

bool WorkerGroup::allSucceeded() const {
  for (const Member& m : members_) {
    if (m.running || m.exitCode != 0 || m.signal != 0) return false;
  }
  return true;
}

WorkerFailure WorkerGroup::failureOf(const Member& m, int nodeRank,
                                     const std::string& host) const {
  WorkerFailure f;
  f.rank = m.rank;
  f.localRank = m.localRank;
  f.nodeRank = nodeRank;
  f.host = host;
  f.pid = m.process.pid;
  f.exitCode = m.exitCode;
  f.signal = m.signal;
  f.time = utcNow();
  f.stderrTail.assign(m.output->stderrTail().begin(), m.output->stderrTail().end());
  return f;
}

void WorkerGroup::closePipes(Member& m) {
  for (int* fd : {&m.process.stdoutFd, &m.process.stderrFd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

}  // namespace distrun::launch
