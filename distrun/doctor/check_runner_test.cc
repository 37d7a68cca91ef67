#include "distrun/doctor/check_runner.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "distrun/common/error.h"
#include "distrun/common/tool_process.h"

namespace distrun::doctor {
namespace {

std::shared_ptr<ProbeContext> context(std::vector<std::string> selected = {}) {
  auto ctx = std::make_shared<ProbeContext>();
  ctx->options.timeLimit = std::chrono::seconds(1);  // the shortest --time-limit
  ctx->options.checks = std::move(selected);
  ctx->options.python = "python3";  // what AnAbandonedCheckKeepsItsContext reads back
  return ctx;
}

// Holds a check until the test opens it: a check that hangs for as long as
// runChecks could wait, and ends afterwards so that no thread outlives the test.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

Check quick(const std::string& name, const std::string& detail = "fine") {
  return {name, "", [name, detail](const ProbeContext&) { return ok(name, detail); }};
}

Check hanging(const std::string& name, std::shared_ptr<Gate> gate, bool alone = false) {
  return {name, "",
          [name, gate](const ProbeContext&) {
            gate->wait();
            return ok(name, "too late");
          },
          alone};
}

TEST(CheckRunnerTest, AHungCheckIsReportedAtTheLimitAndTheOthersKept) {
  auto gate = std::make_shared<Gate>();
  std::vector<CheckResult> results = runChecks({hanging("hangs", gate), quick("quick")}, context());
  gate->open();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].check, "hangs");
  EXPECT_EQ(results[0].state, CheckState::kFail);
  EXPECT_EQ(results[0].detail, "did not finish within 1 s");
  EXPECT_EQ(results[0].fix,
            "a file system or driver on this node hangs: look at `ps -eo pid,stat,wchan,cmd` on "
            "it, or leave the check out with --checks");
  EXPECT_EQ(results[0].seconds, 1.0);
  EXPECT_EQ(results[1].state, CheckState::kOk);
  EXPECT_EQ(results[1].detail, "fine");
}

// A check whose program hangs: the program's limit (runToolWithin) kills it
// before the runner gives the check up, so nothing outlives the doctor.
TEST(CheckRunnerTest, AHungProgramIsKilledByItsLimitBeforeTheCheckIsGivenUp) {
  auto pid = std::make_shared<std::atomic<int>>(0);
  Check program{"program", "", [pid](const ProbeContext& ctx) {
                  ToolRequest request;
                  request.argv = {"sh", "-c", "echo $$; exec sleep 600"};
                  request.limit = ctx.limit();
                  ToolResult r = runToolWithin(request);
                  *pid = std::stoi(r.out);
                  return fail("program", r.timedOut ? "timed out" : "ended", "");
                }};
  std::vector<CheckResult> results = runChecks({program}, context());
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].detail, "timed out") << "the runner gave up before the program's limit";
  ASSERT_GT(pid->load(), 0);
  EXPECT_NE(::kill(pid->load(), 0), 0) << "sleep " << pid->load() << " outlived its check";
}

TEST(CheckRunnerTest, AHungCheckThatRunsAloneIsReportedAndTheNextOneStillRuns) {
  auto gate = std::make_shared<Gate>();
  std::vector<CheckResult> results = runChecks(
      {hanging("hangs", gate, /*alone=*/true), {"after", "", quick("after").run, true}}, context());
  gate->open();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].detail, "did not finish within 1 s");
  EXPECT_EQ(results[1].state, CheckState::kOk);
}

TEST(CheckRunnerTest, AnAbandonedCheckKeepsItsContext) {
  // The abandoned check reads the context after runChecks returned and the
  // caller dropped its pointer: the thread's own copy keeps it alive.
  auto gate = std::make_shared<Gate>();
  auto seen = std::make_shared<std::atomic<int>>(0);  // 1: read as made, 2: read wrong
  Check late{"late", "", [gate, seen](const ProbeContext& ctx) {
               gate->wait();
               *seen = ctx.options.python == "python3" ? 1 : 2;
               return ok("late", "");
             }};
  EXPECT_EQ(runChecks({late}, context())[0].state, CheckState::kFail);
  gate->open();
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (*seen == 0 && std::chrono::steady_clock::now() < giveUp) std::this_thread::yield();
  EXPECT_EQ(*seen, 1);
}

TEST(CheckRunnerTest, OrdinaryChecksRunAtOnce) {
  // Each waits for the other: one at a time, the first would hang.
  auto arrived = std::make_shared<std::atomic<int>>(0);
  auto meet = [arrived](const std::string& name) {
    return Check{name, "", [arrived, name](const ProbeContext&) {
                   ++*arrived;
                   while (*arrived < 2) std::this_thread::yield();
                   return ok(name, "met");
                 }};
  };
  std::vector<CheckResult> results = runChecks({meet("a"), meet("b")}, context());
  EXPECT_EQ(results[0].detail, "met");
  EXPECT_EQ(results[1].detail, "met");
}

TEST(CheckRunnerTest, ChecksThatRunAloneRunAfterTheOthersOneAtATime) {
  auto running = std::make_shared<std::atomic<int>>(0);
  auto others = std::make_shared<std::atomic<int>>(0);
  auto alone = [running, others](const std::string& name) {
    return Check{name, "",
                 [running, others, name](const ProbeContext&) {
                   const int together = ++*running;
                   std::this_thread::sleep_for(std::chrono::milliseconds(20));
                   --*running;
                   return ok(name, "alone " + std::to_string(together == 1) + ", after " +
                                       std::to_string(others->load()));
                 },
                 true};
  };
  auto other = [others](const std::string& name) {
    return Check{name, "", [others, name](const ProbeContext&) {
                   std::this_thread::sleep_for(std::chrono::milliseconds(20));
                   ++*others;
                   return ok(name, "");
                 }};
  };
  std::vector<CheckResult> results =
      runChecks({alone("x"), other("a"), alone("y"), other("b")}, context());
  ASSERT_EQ(results.size(), 4u);
  // In the order of the checks given, whenever each ran.
  EXPECT_EQ(results[0].check, "x");
  EXPECT_EQ(results[1].check, "a");
  EXPECT_EQ(results[2].check, "y");
  EXPECT_EQ(results[3].check, "b");
  EXPECT_EQ(results[0].detail, "alone 1, after 2");
  EXPECT_EQ(results[2].detail, "alone 1, after 2");
}

TEST(CheckRunnerTest, AnErrorOutOfACheckIsItsFailure) {
  Check throws{"throws", "", [](const ProbeContext&) -> CheckResult {
                 throw IoError("cannot read /proc/self/status: Permission denied");
               }};
  Check odd{"odd", "", [](const ProbeContext&) -> CheckResult { throw 42; }};
  std::vector<CheckResult> results = runChecks({throws, odd}, context());
  EXPECT_EQ(results[0].state, CheckState::kFail);
  EXPECT_EQ(results[0].detail, "cannot read /proc/self/status: Permission denied");
  EXPECT_EQ(results[0].fix,
            "the check could not do its work on this node: if it persists, leave it out with "
            "--checks and report it");
  EXPECT_EQ(results[1].state, CheckState::kFail);
  EXPECT_EQ(results[1].detail, "the check ended with an exception that is not an error");
}

TEST(CheckRunnerTest, RunsOnlyTheChecksSelected) {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  Check notChosen{"a", "", [ran](const ProbeContext&) {
                    *ran = true;
                    return ok("a", "");
                  }};
  std::vector<CheckResult> results =
      runChecks({notChosen, quick("b"), quick("c")}, context({"c", "b", "straggler"}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].check, "b");
  EXPECT_EQ(results[1].check, "c");
  EXPECT_FALSE(*ran);
}

TEST(CheckRunnerTest, NamesEachResultAfterItsCheckAndTimesIt) {
  Check slow{"slow", "", [](const ProbeContext&) {
               std::this_thread::sleep_for(std::chrono::milliseconds(20));
               return ok("some other name", "done");
             }};
  std::vector<CheckResult> results = runChecks({slow}, context());
  EXPECT_EQ(results[0].check, "slow");
  EXPECT_GT(results[0].seconds, 0.0);
}

TEST(CheckRunnerTest, NoChecksNoResults) {
  EXPECT_TRUE(runChecks({}, context()).empty());
  EXPECT_TRUE(runChecks({quick("a")}, context({"b"})).empty());
}

}  // namespace
}  // namespace distrun::doctor
