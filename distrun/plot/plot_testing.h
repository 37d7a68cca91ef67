#pragma once
// Helpers for the plot tests: a temporary folder, files, the size an image
// file says it has, metrics files, and whether gnuplot is installed.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/temp_dir_testing.h"
#include "distrun/train/metrics.h"

namespace distrun::plot::testing {

using ::distrun::testing::TempDir;

inline void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Width and height from a PNG's IHDR chunk (after the 8-byte signature,
// the chunk's length and type); {0, 0} when the file is not a PNG.
inline std::pair<uint32_t, uint32_t> pngSize(const std::string& path) {
  const std::string bytes = readText(path);
  if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 ||
      bytes.compare(12, 4, "IHDR") != 0) {
    return {0, 0};
  }
  const auto be32 = [&bytes](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

// A metrics file of `epochs` epochs of `ranks` ranks as distrun-train
// writes it (each rank's waits recorded unless `runtime` is "pytorch").
inline std::string metricsText(int epochs, int ranks, bool withTest,
                               const std::string& runtime = "distrun") {
  std::vector<train::EpochMetrics> history;
  for (int e = 1; e <= epochs; ++e) {
    train::EpochMetrics m;
    m.epoch = e;
    m.trainLoss = 1.0 / e;
    m.samplesPerSecond = 1000.0 + e;
    m.seconds = 2.0;
    if (withTest) {
      m.testLoss = 1.2 / e;
      m.testAccuracy = 0.9 + 0.01 * e;
    }
    for (int r = 0; r < ranks && runtime != "pytorch"; ++r) {
      m.syncSeconds.push_back(0.1 * (r + 1));
    }
    history.push_back(m);
  }
  train::RunDescription run;
  run.workload = "mnist";
  run.runtime = runtime;
  run.worldSize = ranks;
  run.batchSize = 64;
  return train::metricsJson(run, history);
}

// gnuplot is on PATH (scripts/install-deps installs gnuplot-nox).
inline bool hasGnuplot() {
  const char* path = getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/gnuplot").c_str(), X_OK) == 0) return true;
  }
  return false;
}

#define DISTRUN_NEEDS_GNUPLOT()                \
  if (!::distrun::plot::testing::hasGnuplot()) \
  GTEST_SKIP() << "needs gnuplot on PATH (Debian gnuplot-nox: scripts/install-deps)"

// The message and exit code of what `call` throws.
template <typename F>
std::pair<std::string, ExitCode> errorOf(F&& call) {
  try {
    call();
  } catch (const Error& e) {
    return {e.what(), e.exitCode()};
  }
  return {"no error", ExitCode::kSuccess};
}

}  // namespace distrun::plot::testing
