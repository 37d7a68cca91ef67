#include "distrun/train/metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/data/test_files.h"

namespace distrun::train {
namespace {

// The message and exit code of writeMetricsText(path, ...)'s error.
std::pair<std::string, ExitCode> writeError(const std::string& path) {
  try {
    writeMetricsText(path, "{}\n");
  } catch (const Error& e) {
    return {e.what(), e.exitCode()};
  }
  return {"no error", ExitCode::kSuccess};
}

TEST(MetricsFileTest, ReplacesTheFileAndLeavesNothingBeside) {
  data::testing::TempDir tmp;
  const std::string path = tmp.file("m.json");
  writeMetricsText(path, "first\n");
  writeMetricsText(path, "second\n");
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "second\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()), {}), 1);
}

TEST(MetricsFileTest, AMissingFolderIsAnIoErrorNamingTheFlag) {
  const std::string path = "/nonexistent/dir/m.json";
  EXPECT_EQ(writeError(path),
            std::make_pair("--metrics " + path + ": cannot create " + path + ".tmp." +
                               std::to_string(::getpid()) + ": No such file or directory",
                           ExitCode::kIo));
}

// A folder in the way of the file: the rename fails, the folder stays.
TEST(MetricsFileTest, AFolderInTheWayIsAnIoErrorNamingTheFlag) {
  data::testing::TempDir tmp;
  const std::string path = tmp.file("m.json");
  std::filesystem::create_directories(path + "/inside");
  EXPECT_EQ(writeError(path),
            std::make_pair("--metrics " + path + ": cannot rename " + path + ".tmp." +
                               std::to_string(::getpid()) + " to it: Is a directory",
                           ExitCode::kIo));
  EXPECT_TRUE(std::filesystem::is_directory(path + "/inside"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()), {}), 1);
}

}  // namespace
}  // namespace distrun::train
