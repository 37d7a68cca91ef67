#include "distrun/common/user_secret.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/common/exit_code.h"
#include "distrun/common/sha256.h"

namespace distrun {
namespace {

using ::testing::HasSubstr;

class UserSecretTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/user-secret-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    config_ = pattern;
    env_.set("XDG_CONFIG_HOME", config_);
    env_.set("HOME", "/nonexistent-home");
  }
  void TearDown() override { std::filesystem::remove_all(config_); }
  std::string path() const { return config_ + "/distrun/secret"; }
  mode_t modeOf(const std::string& p) const {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }

  std::string config_;
  MapEnvironment env_;
};

TEST_F(UserSecretTest, PathFollowsXdgThenHome) {
  EXPECT_EQ(userSecretPath(env_), path());
  EXPECT_EQ(userSecretPath(MapEnvironment{{"HOME", "/home/ada"}}),
            "/home/ada/.config/distrun/secret");
  // A relative XDG_CONFIG_HOME is invalid (XDG Base Directory): ignored.
  EXPECT_EQ(userSecretPath(MapEnvironment{{"HOME", "/home/ada"}, {"XDG_CONFIG_HOME", "rel"}}),
            "/home/ada/.config/distrun/secret");
}

TEST_F(UserSecretTest, CreatedPrivateOnceAndReused) {
  const std::string first = loadUserSecret(path());
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(modeOf(path()), 0600u);
  EXPECT_EQ(modeOf(config_ + "/distrun"), 0700u);
  EXPECT_EQ(loadUserSecret(path()), first);
  // No file left aside from the creation.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(config_ + "/distrun"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(UserSecretTest, TokenIsTheKeyedHashOfTheIds) {
  const std::string secret = loadUserSecret(path());
  const std::string token = derivedToken(env_, "slurm:42:0");
  EXPECT_EQ(token, toHex(hmacSha256(secret, "distrun job token\nslurm:42:0")));
  EXPECT_NE(derivedToken(env_, "slurm:42:1"), token);
  EXPECT_EQ(derivedToken(env_, "slurm:42:0"), token);
}

TEST_F(UserSecretTest, AFileOthersMayReadIsRefused) {
  loadUserSecret(path());
  ASSERT_EQ(::chmod(path().c_str(), 0644), 0);
  try {
    loadUserSecret(path());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
    EXPECT_EQ(std::string(e.what()),
              "permissions 0644 (owner uid " + std::to_string(::geteuid()) + ") of '" + path() +
                  "' are too open: distrun's job tokens need it private to uid " +
                  std::to_string(::geteuid()) + " (chmod 600 it, or delete it to make a new one)");
  }
}

TEST_F(UserSecretTest, AFolderOthersMayWriteIsRefused) {
  loadUserSecret(path());
  ASSERT_EQ(::chmod((config_ + "/distrun").c_str(), 0777), 0);
  try {
    loadUserSecret(path());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("permissions 0777"));
    EXPECT_THAT(e.what(), HasSubstr("(chmod 700 it), the folder of " + path()));
  }
}

TEST_F(UserSecretTest, ASymlinkIsNotFollowed) {
  std::filesystem::create_directories(config_ + "/distrun");
  ::chmod((config_ + "/distrun").c_str(), 0700);
  std::filesystem::create_symlink("/etc/hostname", path());
  try {
    loadUserSecret(path());
    FAIL();
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open '" + path() + "'"));
  }
}

TEST_F(UserSecretTest, AFolderThatCannotBeMadeIsNamed) {
  try {
    loadUserSecret("/proc/distrun-test/distrun/secret");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kIo);
    EXPECT_EQ(std::string(e.what()),
              "cannot make the folder '/proc/distrun-test/distrun' of distrun's secret: No such "
              "file or directory: set DISTRUN_TOKEN, or XDG_CONFIG_HOME to a folder you can "
              "write");
  }
}

TEST_F(UserSecretTest, AShortFileIsRefused) {
  std::filesystem::create_directories(config_ + "/distrun");
  ::chmod((config_ + "/distrun").c_str(), 0700);
  std::ofstream(path()) << "abc\n";
  ::chmod(path().c_str(), 0600);
  try {
    loadUserSecret(path());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "'" + path() +
                                         "' holds 3 characters, expected at least 64: delete "
                                         "it to make a new one");
  }
}

}  // namespace
}  // namespace distrun
