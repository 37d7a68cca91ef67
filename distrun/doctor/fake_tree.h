#pragma once
// For the tests of the system checks: a folder standing in for a node's
// root, where a test writes the /proc, /sys and /dev files a reader reads.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace distrun::doctor::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with its content.
class FakeTree {
 public:
  FakeTree() {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/distrun-doctor-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
    root_ = pattern;
  }
  ~FakeTree() {
    std::error_code error;
    std::filesystem::remove_all(root_, error);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  // The folder to pass as a reader's root.
  const std::string& root() const { return root_; }
  // root() + `path` ("/sys/fs/cgroup/memory.max").
  std::string path(const std::string& path) const { return root_ + path; }

  // Writes `text` to root() + `path`, making its folders.
  void write(const std::string& path, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(root_ + path).parent_path());
    std::ofstream out(root_ + path, std::ios::trunc);
    out << text;
    ASSERT_TRUE(out.good()) << "cannot write " << root_ + path;
  }
  void makeFolder(const std::string& path) const {
    std::filesystem::create_directories(root_ + path);
  }

 private:
  std::string root_;
};

}  // namespace distrun::doctor::testing
