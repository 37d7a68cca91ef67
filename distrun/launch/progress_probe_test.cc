#include "distrun/launch/progress_probe.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace distrun::launch {
namespace {

// A /proc/PID/stat line: state, process group and the four CPU times.
std::string statLine(int pid, const std::string& command, char state, int pgrp, int utime,
                     int stime, int cutime = 0, int cstime = 0) {
  return std::to_string(pid) + " (" + command + ") " + state + " 1 " + std::to_string(pgrp) + " " +
         std::to_string(pgrp) + " 0 -1 4194560 100 0 0 0 " + std::to_string(utime) + " " +
         std::to_string(stime) + " " + std::to_string(cutime) + " " + std::to_string(cstime) +
         " 20 0 1 0 12345 1000000 200 18446744073709551615\n";
}

TEST(ParseProcStatTest, ReadsStateGroupAndCpuTimes) {
  std::optional<ProcStat> stat = parseProcStat(statLine(4711, "python3", 'S', 4700, 10, 2, 3, 1));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->pgrp, 4700);
  EXPECT_EQ(stat->cpuTicks, 16);
}

TEST(ParseProcStatTest, ACommandWithSpacesAndParenthesesIsSkipped) {
  std::optional<ProcStat> stat = parseProcStat(statLine(7, "a (b) ) c", 'T', 7, 1, 1));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->state, 'T');
  EXPECT_EQ(stat->pgrp, 7);
  EXPECT_EQ(stat->cpuTicks, 2);
}

TEST(ParseProcStatTest, ALineThatIsNotOneIsNothing) {
  EXPECT_FALSE(parseProcStat(""));
  EXPECT_FALSE(parseProcStat("4711 python3 S 1 2"));
  EXPECT_FALSE(parseProcStat("4711 (python3) S 1 x 2 0 -1 0 0 0 0 0 1 1 1 1"));
  EXPECT_FALSE(parseProcStat("4711 (python3) S 1 2"));
}

class ProcProgressProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "proc_" + std::to_string(::getpid());
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& entry, const std::string& stat) {
    std::filesystem::create_directories(root_ + "/" + entry);
    std::ofstream(root_ + "/" + entry + "/stat") << stat;
  }
  std::string root_;
};

TEST_F(ProcProgressProbeTest, SumsEachGroupsProcessesAndSeesAStoppedOne) {
  write("100", statLine(100, "sh", 'S', 100, 5, 1, 2, 0));
  write("101", statLine(101, "python3", 'T', 100, 30, 4));
  write("200", statLine(200, "sh", 'R', 200, 7, 0));
  write("300", statLine(300, "other", 'R', 300, 99, 99));
  write("self", statLine(100, "sh", 'R', 100, 1000, 0));  // not a pid: skipped
  write("400", "garbage");
  std::map<int, GroupUsage> usage = ProcProgressProbe(root_).usage({100, 200, 500});
  ASSERT_EQ(usage.size(), 2u) << "group 500 has no process";
  EXPECT_EQ(usage[100].cpuTicks, 42);
  EXPECT_TRUE(usage[100].stopped);
  EXPECT_EQ(usage[200].cpuTicks, 7);
  EXPECT_FALSE(usage[200].stopped);
}

// Each thread's wait channel, the main thread first, the others counted;
// "0" is a thread on a CPU.
TEST_F(ProcProgressProbeTest, WaitChannelsNameTheMainThreadThenCountTheOthers) {
  for (const auto& [task, channel] :
       std::vector<std::pair<std::string, std::string>>{{"100", "hrtimer_nanosleep"},
                                                        {"101", "futex_wait_queue"},
                                                        {"102", "futex_wait_queue"},
                                                        {"103", "ep_poll"},
                                                        {"104", "0"}}) {
    std::filesystem::create_directories(root_ + "/100/task/" + task);
    std::ofstream(root_ + "/100/task/" + task + "/wchan") << channel;
  }
  EXPECT_EQ(ProcProgressProbe(root_).waitChannels(100),
            "hrtimer_nanosleep (main thread), ep_poll, futex_wait_queue x2, running");
  EXPECT_EQ(ProcProgressProbe(root_).waitChannels(999), "") << "a process that is gone";
}

TEST_F(ProcProgressProbeTest, AMissingProcFolderGivesNothing) {
  EXPECT_TRUE(ProcProgressProbe(root_ + "/absent").usage({1}).empty());
}

TEST(SystemProgressProbeTest, ReadsThisProcessGroup) {
  std::map<int, GroupUsage> usage = ProcProgressProbe::system().usage({::getpgrp()});
  ASSERT_EQ(usage.count(::getpgrp()), 1u);
  EXPECT_FALSE(usage[::getpgrp()].stopped);
}

}  // namespace
}  // namespace distrun::launch
