#include "distrun/launch/worker_group.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <deque>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// Stands in for the processes: each "worker" is a pair of pipes whose
// write ends the test holds, and exits are whatever the test queues.
class FakeProcessLauncher : public ProcessLauncher {
 public:
  WorkerProcess start(const WorkerSpec& spec) override {
    started.push_back(spec.argv);
    pid_t pid = 100 + static_cast<pid_t>(started.size());
    WorkerProcess p{pid, UniqueFd(), UniqueFd(), UniqueFd()};
    p.stdoutFd = pipeTo(stdoutOf[pid]);
    p.stderrFd = pipeTo(stderrOf[pid]);
    p.progressFd = pipeTo(progressOf[pid]);
    return p;
  }
  void signal(pid_t group, int signal) override { signals.emplace_back(group, signal); }
  std::vector<Exit> reap() override {
    std::vector<Exit> out(exits.begin(), exits.end());
    exits.clear();
    return out;
  }
  void waitFor(pid_t pid) override { waited.push_back(pid); }
  void hurryExit(pid_t pid) override { hurried.push_back(pid); }

  // Writes `text` to the worker's stderr and closes it, as an exit does.
  void writeStderrAndClose(pid_t pid, const std::string& text) {
    ASSERT_EQ(::write(stderrOf[pid].get(), text.data(), text.size()),
              static_cast<ssize_t>(text.size()));
    stderrOf[pid].reset();
    stdoutOf[pid].reset();
  }

  std::vector<std::vector<std::string>> started;
  std::vector<std::pair<pid_t, int>> signals;
  std::deque<Exit> exits;
  std::vector<pid_t> waited;
  std::vector<pid_t> hurried;
  std::map<pid_t, UniqueFd> stdoutOf;
  std::map<pid_t, UniqueFd> stderrOf;
  std::map<pid_t, UniqueFd> progressOf;

 private:
  // A pipe: the write end goes to `writeEnd`, the read end is returned.
  static UniqueFd pipeTo(UniqueFd& writeEnd) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    writeEnd.reset(fds[1]);
    return UniqueFd(fds[0]);
  }
};

std::unique_ptr<WorkerOutput> quietOutput() {
  return std::make_unique<WorkerOutput>("", StreamRoute{false, false, false, false}, "");
}

TEST(WorkerGroupTest, ReapGivesTheExitRecordWithTheStderrTail) {
  FakeProcessLauncher launcher;
  WorkerGroup group(launcher, 1, "gpu02");
  group.add(4, 0, WorkerSpec{{"train"}, {}, {}}, quietOutput());
  group.add(5, 1, WorkerSpec{{"train"}, {}, {}}, quietOutput());
  EXPECT_THAT(group.reap(), IsEmpty());
  launcher.writeStderrAndClose(102, "loading\nout of memory\n");
  launcher.exits.push_back({102, 0, SIGABRT});
  launcher.exits.push_back({999, 0, SIGKILL});  // an adopted orphan: not a worker
  std::vector<WorkerFailure> exited = group.reap();
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].rank, 5);
  EXPECT_EQ(exited[0].localRank, 1);
  EXPECT_EQ(exited[0].nodeRank, 1);
  EXPECT_EQ(exited[0].host, "gpu02");
  EXPECT_EQ(exited[0].pid, 102);
  EXPECT_EQ(exited[0].signal, SIGABRT);
  EXPECT_EQ(exited[0].agentExitCode(), 128 + SIGABRT);
  EXPECT_THAT(exited[0].stderrTail, ElementsAre("loading", "out of memory"));
}

TEST(WorkerGroupTest, SignalsReachOnlyRunningWorkersAndTheRestAreKilledAtTheEnd) {
  FakeProcessLauncher launcher;
  {
    WorkerGroup group(launcher, 0, "a");
    group.add(0, 0, WorkerSpec{{"w"}, {}, {}}, quietOutput());
    group.add(1, 1, WorkerSpec{{"w"}, {}, {}}, quietOutput());
    launcher.exits.push_back({101, 0, 0});
    EXPECT_EQ(group.reap().at(0).exitCode, 0);
    group.signalAll(SIGUSR1);
    EXPECT_THAT(launcher.signals, ElementsAre(Pair(102, SIGUSR1)));
    group.hurryExiting();
    EXPECT_THAT(launcher.hurried, ElementsAre(102));
  }
  EXPECT_THAT(launcher.signals, ElementsAre(Pair(102, SIGUSR1), Pair(102, SIGKILL)));
  EXPECT_THAT(launcher.waited, ElementsAre(102));
}

// What --hang-timeout samples: the probe's CPU time per process group and
// the bytes each running worker wrote.
class FixedUsageProbe : public ProgressProbe {
 public:
  std::map<int, GroupUsage> usage(const std::set<int>& groups) const override {
    asked = groups;
    return {{101, GroupUsage{42, false}}, {102, GroupUsage{7, true}}};
  }
  mutable std::set<int> asked;
};

TEST(WorkerGroupTest, ProgressIsTheGroupsCpuTimeTheOutputReadAndTheReports) {
  FakeProcessLauncher launcher;
  WorkerGroup group(launcher, 0, "a");
  group.add(4, 0, WorkerSpec{{"w"}, {}, {}}, quietOutput());
  group.add(5, 1, WorkerSpec{{"w"}, {}, {}}, quietOutput());
  group.add(6, 2, WorkerSpec{{"w"}, {}, {}}, quietOutput());
  ASSERT_EQ(::write(launcher.stdoutOf[101].get(), "step 1\n", 7), 7);
  ASSERT_EQ(::write(launcher.stderrOf[101].get(), "warn\n", 5), 5);
  ASSERT_EQ(::write(launcher.progressOf[102].get(), "...", 3), 3);
  std::vector<pollfd> fds;
  group.addPollFds(fds);
  ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
  group.pumpOutput(fds);
  launcher.exits.push_back({103, 0, 0});
  group.reap();

  FixedUsageProbe probe;
  std::vector<WorkerProgress> progress = group.progress(probe);
  EXPECT_EQ(probe.asked, (std::set<int>{101, 102})) << "running workers only";
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress[0].record.rank, 4);
  EXPECT_EQ(progress[0].record.pid, 101);
  EXPECT_EQ(progress[0].cpuTicks, 42);
  EXPECT_EQ(progress[0].outputBytes, 12);
  EXPECT_EQ(progress[0].reports, 0);
  EXPECT_THAT(progress[0].record.stderrTail, ElementsAre("warn"));
  EXPECT_FALSE(progress[0].stopped);
  EXPECT_EQ(progress[1].record.rank, 5);
  EXPECT_EQ(progress[1].outputBytes, 0);
  EXPECT_EQ(progress[1].reports, 3) << "bytes on its progress pipe, not output";
  EXPECT_TRUE(progress[1].stopped);
}

// Status records on the progress pipe: every byte counts as a report (the
// hang watch's contract), and the latest record of each worker that wrote
// one is its status, kept after it exits.
TEST(WorkerGroupTest, StatusRecordsOnTheProgressPipeAreReportsToo) {
  FakeProcessLauncher launcher;
  WorkerGroup group(launcher, 0, "a");
  group.add(4, 0, WorkerSpec{{"w"}, {}, {}}, quietOutput());
  group.add(5, 1, WorkerSpec{{"w"}, {}, {}}, quietOutput());
  group.add(6, 2, WorkerSpec{{"w"}, {}, {}}, quietOutput());
  const std::string records = "..status epoch=1 step=2\n.status epoch=1 step=3\n.";
  ASSERT_EQ(::write(launcher.progressOf[101].get(), records.data(), records.size()),
            static_cast<ssize_t>(records.size()));
  ASSERT_EQ(::write(launcher.progressOf[103].get(), "status step=1\n", 14), 14);
  std::vector<pollfd> fds;
  group.addPollFds(fds);
  ASSERT_GT(::poll(fds.data(), fds.size(), 1000), 0);
  group.pumpOutput(fds);
  launcher.exits.push_back({103, 0, 0});
  group.reap();

  std::vector<RankStatus> statuses = group.statuses();
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_EQ(statuses[0].rank, 4);
  EXPECT_EQ(statuses[0].record.step, 3);
  EXPECT_EQ(statuses[1].rank, 6);
  EXPECT_EQ(statuses[1].record.step, 1);
  FixedUsageProbe probe;
  EXPECT_EQ(group.progress(probe).at(0).reports, static_cast<long long>(records.size()));
}

}  // namespace
}  // namespace distrun::launch
