#pragma once

// What the store's tests share: one home for their constants.

#include <chrono>

namespace distrun::rdzv::store_testing {

// A connect or get budget that no healthy run nears: a test that waits this
// long has failed.
inline constexpr std::chrono::seconds kGenerous{30};

}  // namespace distrun::rdzv::store_testing
