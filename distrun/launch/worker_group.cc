#include "distrun/launch/worker_group.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <set>

#include "distrun/launch/error_file.h"

namespace distrun::launch {

WorkerGroup::WorkerGroup(ProcessLauncher& launcher, int nodeRank, std::string host)
    : launcher_(launcher), nodeRank_(nodeRank), host_(std::move(host)) {}

WorkerGroup::~WorkerGroup() {
  signalAll(SIGKILL);
  for (Member& m : members_) {
    if (m.running) launcher_.waitFor(m.process.pid);
  }
}

int WorkerGroup::add(int rank, int localRank, const WorkerSpec& spec,
                     std::unique_ptr<WorkerOutput> output) {
  Member m{rank, localRank, launcher_.start(spec), std::move(output), spec.errorFile};
  members_.push_back(std::move(m));
  return members_.back().process.pid;
}

void WorkerGroup::addPollFds(std::vector<pollfd>& fds) const {
  for (const Member& m : members_) {
    for (const UniqueFd* fd : {&m.process.stdoutFd, &m.process.stderrFd, &m.process.progressFd}) {
      if (fd->valid()) fds.push_back(pollfd{fd->get(), POLLIN, 0});
    }
  }
}

// Counts what the worker reported when `fd` is its progress pipe; the pipe
// is closed once the worker closed it (or it failed).
bool WorkerGroup::pumpReports(Member& m, int fd) {
  if (fd != m.process.progressFd.get()) return false;
  char buffer[4096];
  ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n > 0) {
    m.reports += n;
    m.status.feed(std::string_view(buffer, static_cast<size_t>(n)));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    m.process.progressFd.reset();
  }
  return true;
}

void WorkerGroup::pumpOutput(const std::vector<pollfd>& fds) {
  char buffer[65536];
  for (const pollfd& p : fds) {
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    for (Member& m : members_) {
      if (pumpReports(m, p.fd)) continue;
      bool isOut = p.fd == m.process.stdoutFd.get();
      if (!isOut && p.fd != m.process.stderrFd.get()) continue;
      ssize_t n = ::read(p.fd, buffer, sizeof(buffer));
      if (n > 0) {
        std::string_view bytes(buffer, static_cast<size_t>(n));
        m.outputBytes += n;
        isOut ? m.output->onStdout(bytes) : m.output->onStderr(bytes);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        (isOut ? m.process.stdoutFd : m.process.stderrFd).reset();
      }
    }
  }
}

void WorkerGroup::drain(Member& m) {
  std::vector<pollfd> fds;
  for (const UniqueFd* fd : {&m.process.stdoutFd, &m.process.stderrFd, &m.process.progressFd}) {
    if (fd->valid()) fds.push_back(pollfd{fd->get(), POLLIN, POLLIN});
  }
  // The worker has exited: what it wrote is in the pipes (its last status
  // record too). Read until they are empty (EAGAIN) or closed; a grandchild
  // holding them open cannot stall the report.
  for (int round = 0; round < 1024 && !fds.empty(); ++round) {
    pumpOutput(fds);
    std::erase_if(fds, [&](const pollfd& p) {
      return p.fd != m.process.stdoutFd.get() && p.fd != m.process.stderrFd.get() &&
             p.fd != m.process.progressFd.get();
    });
    if (::poll(fds.data(), fds.size(), 0) <= 0) break;
  }
  m.output->finish();
}

std::vector<WorkerFailure> WorkerGroup::reap() {
  std::vector<WorkerFailure> exited;
  for (const ProcessLauncher::Exit& exit : launcher_.reap()) {
    Member* m = memberWithPid(exit.pid);
    if (m == nullptr) continue;  // an adopted orphan
    finishExit(*m, exit);
    WorkerFailure f = recordOf(*m);
    if (f.exitCode != 0 || f.signal != 0) f.afterRaiseOf = raisedBefore(f);
    exited.push_back(std::move(f));
  }
  return exited;
}

// A running worker whose error file already holds an exception raised
// before `f`'s own (f has none, or a later one: torchrun's order, to the
// second); -1 when none. Read only when a worker failed.
int WorkerGroup::raisedBefore(const WorkerFailure& f) const {
  for (const Member& m : members_) {
    if (!m.running || m.errorFile.empty()) continue;
    std::optional<RecordedError> raised = readErrorFile(m.errorFile);
    if (raised && (f.errorTimestamp == 0 || raised->timestamp < f.errorTimestamp)) return m.rank;
  }
  return -1;
}

WorkerGroup::Member* WorkerGroup::memberWithPid(pid_t pid) {
  for (Member& m : members_) {
    if (m.process.pid == pid && m.running) return &m;
  }
  return nullptr;
}

void WorkerGroup::finishExit(Member& m, const ProcessLauncher::Exit& exit) {
  m.running = false;
  m.exitCode = exit.exitCode;
  m.signal = exit.signal;
  // A grandchild may hold the pipes open for ever; what the worker itself
  // wrote is in them now.
  drain(m);
  m.process.stdoutFd.reset();
  m.process.stderrFd.reset();
  m.process.progressFd.reset();
}

void WorkerGroup::signalAll(int signal) {
  for (Member& m : members_) {
    if (m.running) launcher_.signal(m.process.pid, signal);
  }
}

void WorkerGroup::hurryExiting() {
  for (Member& m : members_) {
    if (m.running) launcher_.hurryExit(m.process.pid);
  }
}

std::vector<WorkerProgress> WorkerGroup::progress(const ProgressProbe& probe) {
  std::set<int> groups;
  for (const Member& m : members_) {
    if (m.running) groups.insert(m.process.pid);
  }
  std::map<int, GroupUsage> usage = probe.usage(groups);
  std::vector<WorkerProgress> out;
  for (Member& m : members_) {
    if (!m.running) continue;
    GroupUsage used = usage.count(m.process.pid) ? usage.at(m.process.pid) : GroupUsage{};
    WorkerProgress now{recordOf(m), used.cpuTicks, m.outputBytes, used.stopped, m.reports};
    // Where an idle worker (no progress since the last call) waits: what a
    // hang report shows, and what tells a rank from the peers waiting for it.
    if (m.lastSample && !madeProgress(now, *m.lastSample)) {
      now.record.waits = probe.waitChannels(m.process.pid);
    }
    m.lastSample = WorkerProgress{{}, now.cpuTicks, now.outputBytes, now.stopped, now.reports};
    out.push_back(std::move(now));
  }
  return out;
}

std::vector<RankStatus> WorkerGroup::statuses() const {
  std::vector<RankStatus> out;
  for (const Member& m : members_) {
    if (m.status.latest()) out.push_back(RankStatus{m.rank, *m.status.latest()});
  }
  return out;
}

WorkerFailure WorkerGroup::recordOf(const Member& m) const {
  WorkerFailure f;
  f.rank = m.rank;
  f.localRank = m.localRank;
  f.nodeRank = nodeRank_;
  f.host = host_;
  f.pid = m.process.pid;
  f.exitCode = m.exitCode;
  f.signal = m.signal;
  f.time = utcNow();
  f.exitedMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
  f.stderrTail.assign(m.output->stderrTail().begin(), m.output->stderrTail().end());
  if (m.running || m.errorFile.empty() || (m.exitCode == 0 && m.signal == 0)) return f;
  if (std::optional<RecordedError> error = readErrorFile(m.errorFile)) {
    f.errorMessage = error->message;
    f.errorTraceback = error->traceback;
    f.errorTimestamp = error->timestamp;
    f.errorWrittenMs = error->writtenMs;
  }
  return f;
}

}  // namespace distrun::launch
