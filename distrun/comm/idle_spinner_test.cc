#include "distrun/comm/idle_spinner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "distrun/comm/testing/contract.h"

namespace distrun::comm {
namespace {

// Waits (up to a minute: this is no timing assertion) for `done`.
template <class F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(IdleSpinnerTest, ItsThreadIsNamedForProcessListings) {
  IdleSpinner spinner;
  EXPECT_TRUE(eventually([] {
    const std::vector<std::string> names = testing::threadNames();
    return std::find(names.begin(), names.end(), "distrun-spin") != names.end();
  }));
}

TEST(IdleSpinnerTest, SpinsOnlyWhileAnOperationIsInFlight) {
  IdleSpinner spinner;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(spinner.rounds(), 0u) << "spun with nothing in flight";
  {
    IdleSpinner::Scope inFlight(&spinner);
    // The spinner is of the idle class: it runs once this thread sleeps.
    EXPECT_TRUE(eventually([&] { return spinner.rounds() > 0; }));
  }
  // Once the scope is gone the count stops growing: the round under way
  // may still end (an idle-class thread on a busy machine can wait long for
  // the CPU to finish it), no other begins.
  const uint64_t atEnd = spinner.rounds();
  EXPECT_TRUE(eventually([&] {
    const uint64_t before = spinner.rounds();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return spinner.rounds() == before;
  }));
  EXPECT_LE(spinner.rounds(), atEnd + 1);
}

TEST(IdleSpinnerTest, NestedScopesAndANullSpinner) {
  IdleSpinner spinner;
  {
    IdleSpinner::Scope outer(&spinner);
    { IdleSpinner::Scope inner(&spinner); }
    EXPECT_TRUE(eventually([&] { return spinner.rounds() > 0; }));  // outer still holds it
  }
  IdleSpinner::Scope nothing(nullptr);
}

// The spinning thread is held where it has just woken, as a starved
// idle-class thread would be on a busy CPU: opening and closing Scopes must
// not wait for it (with a lock shared with it, a collective could wait until
// the idle-class thread got the CPU again).
TEST(IdleSpinnerTest, ScopesNeverWaitForAHeldSpinningThread) {
  std::atomic<bool> held{false};
  std::atomic<bool> release{false};
  IdleSpinner spinner([&] {
    held.store(true);
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    IdleSpinner::Scope first(&spinner);
    ASSERT_TRUE(eventually([&] { return held.load(); }));
  }
  std::atomic<int> opened{0};
  std::thread user([&] {
    for (int i = 0; i < 1000; ++i) {
      IdleSpinner::Scope scope(&spinner);
      opened.fetch_add(1);
    }
  });
  const bool allOpened = eventually([&] { return opened.load() == 1000; });
  release.store(true);
  user.join();
  EXPECT_TRUE(allOpened) << "a Scope waited for the held thread; " << opened.load() << " opened";
}

}  // namespace
}  // namespace distrun::comm
