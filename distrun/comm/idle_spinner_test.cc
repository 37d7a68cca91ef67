#include "distrun/comm/idle_spinner.h"

#include <algorithm>
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

}  // namespace
}  // namespace distrun::comm
