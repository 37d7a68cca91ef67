#pragma once

// For the GPU loaders' tests: the message of the ConfigError `load` throws,
// checked to be one line with exit code 78; "" when it throws none.

#include <gtest/gtest.h>

#include <string>

#include "distrun/common/error.h"

namespace distrun::comm::gpu::testing {

template <class Load>
std::string configErrorOf(Load load) {
  try {
    load();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

}  // namespace distrun::comm::gpu::testing
