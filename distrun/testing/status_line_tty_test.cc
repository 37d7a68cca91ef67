// The agent's status line on a real terminal (label: multiproc; needs
// tmux, skipped with the reason printed without it): `distrun train` on 2
// ranks in a detached tmux session of a known width, its pane captured
// mid-run and at the end (docs/observability.md, "Live progress").
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/testing/command.h"

namespace distrun::testing {
namespace {

constexpr int kColumns = 80;
constexpr int kRows = 40;
// Generous: the machine may be busy; nothing here asserts a duration.
constexpr auto kSeeTheLine = std::chrono::seconds(120);
constexpr auto kSeeTheEnd = std::chrono::seconds(300);
constexpr auto kPoll = std::chrono::milliseconds(50);

// A tmux server of the test's own (its socket name), so that a user's
// sessions are neither seen nor touched; killed at the end.
class TmuxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (runCommand("command -v tmux").exitCode != 0) {
      GTEST_SKIP() << "tmux not found (scripts/install-deps installs it): the status line is "
                      "not tested on a terminal";
    }
  }
  void TearDown() override { runCommand(tmux("kill-server") + " 2>/dev/null"); }

  std::string tmux(const std::string& args) const {
    return "tmux -f /dev/null -L " + socket_ + " " + args;
  }
  void start(const std::string& command) {
    CommandResult r = runCommand(tmux("new-session -d -s job -x " + std::to_string(kColumns) +
                                      " -y " + std::to_string(kRows) + " " + quote(command)));
    ASSERT_EQ(r.exitCode, 0) << r.err;
  }
  // The pane's lines as the user sees them, trailing blanks cut.
  std::vector<std::string> pane() const {
    std::vector<std::string> out;
    for (std::string line : lines(runCommand(tmux("capture-pane -p -t job")).out)) {
      line.erase(line.find_last_not_of(' ') + 1);
      if (!line.empty()) out.push_back(line);
    }
    return out;
  }

  std::string socket_ = "distrun-status-test-" + std::to_string(::getpid());
};

bool isStatusLine(const std::string& line) {
  static const std::regex status(R"(^epoch \d+/12  step \d+/1024  loss \d+\.\d{4}.*)");
  return std::regex_match(line, status);
}

bool isWorkerLine(const std::string& line) { return line.rfind("[0:", 0) == 0; }

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

// Mid-run: the workers' prefixed lines scroll above, and the last line is
// the one status line, fitted to the pane; at the end nothing of it is left.
TEST_F(TmuxTest, OneStatusLineUnderTheWorkersLinesAndNothingLeftAtTheEnd) {
  start(
      quote(binaryPath("distrun")) +
      " train --nproc-per-node 2 linear --epochs 12 --batch-size 1; echo EXIT=$?; exec sleep 600");
  std::vector<std::string> seen;
  bool midRun = false;
  for (auto until = std::chrono::steady_clock::now() + kSeeTheLine;
       !midRun && std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(kPoll)) {
    seen = pane();
    ASSERT_TRUE(seen.empty() || seen.back().rfind("EXIT=", 0) != 0)
        << "the run ended before its status line was seen under its lines:\n"
        << joined(seen);
    midRun = seen.size() >= 2 && isStatusLine(seen.back()) && isWorkerLine(seen.front());
  }
  ASSERT_TRUE(midRun) << joined(seen);
  EXPECT_LT(seen.back().size(), static_cast<size_t>(kColumns)) << seen.back();
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_TRUE(isWorkerLine(seen[i])) << "line " << i << " of\n" << joined(seen);
  }

  for (auto until = std::chrono::steady_clock::now() + kSeeTheEnd;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(kPoll)) {
    seen = pane();
    if (!seen.empty() && seen.back().rfind("EXIT=", 0) == 0) break;
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), "EXIT=0") << joined(seen);
  EXPECT_THAT(seen[seen.size() - 2], ::testing::HasSubstr("parameters identical on all 2 ranks"));
  for (size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_TRUE(isWorkerLine(seen[i])) << "a leftover in line " << i << " of\n" << joined(seen);
  }
}

}  // namespace
}  // namespace distrun::testing
