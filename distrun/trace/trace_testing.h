#pragma once
// Helpers for the trace tests: a temporary folder and a trace file read
// back as JSON lines.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/common/temp_dir_testing.h"

namespace distrun::trace::testing {

using ::distrun::testing::TempDir;

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every line of the file parsed; a line that is not JSON fails the test.
inline std::vector<nlohmann::json> readLines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << "not a JSON line in " << path << ": " << line;
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// The events named `name`.
inline std::vector<nlohmann::json> eventsNamed(const std::vector<nlohmann::json>& lines,
                                               const std::string& name) {
  std::vector<nlohmann::json> found;
  for (const nlohmann::json& line : lines) {
    if (line.contains("name") && line["name"] == name) found.push_back(line);
  }
  return found;
}

}  // namespace distrun::trace::testing
