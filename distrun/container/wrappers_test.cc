#include "distrun/container/wrappers.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "distrun/common/system.h"
#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"

namespace distrun::container {
namespace {

namespace fs = std::filesystem;
using distrun::testing::quote;
using distrun::testing::runCommand;

void writeExecutable(const std::string& path, const std::string& text, mode_t mode = 0755) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

TEST(WrapperScriptTest, EntersTheImageOrExecsInsideIt) {
  EXPECT_EQ(wrapperScript("/opt/distrun/bin/distrun", "/images/env.sif",
                          {"python", "/opt/env/bin/python"}),
            "#!/bin/sh\n"
            "# Written by distrun wrap: runs /opt/env/bin/python inside the image "
            "/images/env.sif.\n"
            "if [ \"${DISTRUN_CONTAINER:-}\" = /images/env.sif ]; then\n"
            "  exec /opt/env/bin/python \"$@\"\n"
            "fi\n"
            "exec /opt/distrun/bin/distrun enter /images/env.sif -- /opt/env/bin/python \"$@\"\n");
}

TEST(WrapperScriptTest, PathsWithSpacesAndQuotesAreQuoted) {
  std::string script = wrapperScript("/my tools/distrun", "/img's/e.sif", {"x", "/opt/a b/x"});
  EXPECT_NE(script.find("exec '/my tools/distrun' enter '/img'\\''s/e.sif' -- '/opt/a b/x' "
                        "\"$@\"\n"),
            std::string::npos);
}

class WrappersTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(scratch_.path().empty()); }
  std::string at(const std::string& relative) { return scratch_.path() + "/" + relative; }

  distrun::testing::ScratchDir scratch_{"wrappers"};
};

TEST_F(WrappersTest, ExecutablesOfAFolderInNameOrderFirstNameWins) {
  const std::string root = at("root");
  writeExecutable(root + "/opt/env/bin/python3.11", "");
  fs::create_symlink("python3.11", root + "/opt/env/bin/python");
  fs::create_symlink("/usr/bin/tool", root + "/opt/env/bin/tool");  // absolute: the image's
  writeExecutable(root + "/usr/bin/tool", "");
  writeExecutable(root + "/opt/env/bin/activate", "", 0644);  // not executable
  writeExecutable(root + "/opt/env/bin/.hidden", "");
  fs::create_symlink("/nowhere", root + "/opt/env/bin/dangling");
  fs::create_directories(root + "/opt/env/bin/subdir");
  writeExecutable(root + "/opt/other/bin/python", "");
  std::vector<WrappedProgram> programs =
      programsToWrap(root, {"/opt/env/bin", "/opt/other/bin", "/usr/bin/tool", "/missing"});
  ASSERT_EQ(programs.size(), 3u);
  EXPECT_EQ(programs[0].name, "python");
  EXPECT_EQ(programs[0].pathInImage, "/opt/env/bin/python");  // the link: argv[0] kept
  EXPECT_EQ(programs[1].name, "python3.11");
  EXPECT_EQ(programs[2].name, "tool");
  EXPECT_EQ(programs[2].pathInImage, "/opt/env/bin/tool");
}

TEST_F(WrappersTest, DefaultsAreEachDirsBinAndPython) {
  const std::string root = at("root");
  fs::create_directories(root + "/opt/env/bin");
  fs::create_directories(root + "/opt/data");
  std::vector<DirSource> dirs = {{"/h/env", "/opt/env"}, {"/h/data", "/opt/data"}};
  EXPECT_EQ(defaultWrapPaths(root, dirs), std::vector<std::string>{"/opt/env/bin"});
  writeExecutable(root + "/usr/bin/python3.11", "");
  fs::create_symlink("python3.11", root + "/usr/bin/python3");
  EXPECT_EQ(defaultWrapPaths(root, dirs),
            (std::vector<std::string>{"/opt/env/bin", "/usr/bin/python3"}));
  // The Python environment of --pip, /opt/env, is wrapped when the image
  // has one, whatever put it there.
  EXPECT_EQ(defaultWrapPaths(root, {{"/h/rootfs", "/"}}),
            (std::vector<std::string>{"/opt/env/bin", "/usr/bin/python3"}));
  fs::remove_all(root + "/opt/env");
  EXPECT_EQ(defaultWrapPaths(root, {{"/h/rootfs", "/"}}),
            std::vector<std::string>{"/usr/bin/python3"});
}

// The wrapper as a shell runs it: through `distrun enter` from outside,
// straight to the program inside (DISTRUN_CONTAINER is the image).
TEST_F(WrappersTest, WrittenWrappersRunTheRightCommand) {
  const std::string fakeDistrun = at("tools/distrun");
  writeExecutable(fakeDistrun, "#!/bin/sh\necho \"distrun $*\"\n");
  const std::string program = at("inside/bin/hello");  // stands for the path in the image
  writeExecutable(program, "#!/bin/sh\necho \"hello $0 $*\"\n");
  const std::string image = at("images/env.sif");
  writeWrappers(at("prefix"), fakeDistrun, image, {{"hello", program}});
  const std::string wrapper = at("prefix/bin/hello");
  struct stat st {};
  ASSERT_EQ(::stat(wrapper.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  EXPECT_EQ(readFileIfPresent(wrapper).value_or(""),
            wrapperScript(fakeDistrun, image, {"hello", program}));
  EXPECT_EQ(runCommand("unset DISTRUN_CONTAINER; " + quote(wrapper) + " a 'b c'").out,
            "distrun enter " + image + " -- " + program + " a b c\n");
  EXPECT_EQ(runCommand("DISTRUN_CONTAINER=" + quote(image) + " " + quote(wrapper) + " a").out,
            "hello " + program + " a\n");
  EXPECT_EQ(runCommand("DISTRUN_CONTAINER=/other.sif " + quote(wrapper)).out,
            "distrun enter " + image + " -- " + program + "\n");
}

TEST_F(WrappersTest, AnExistingWrapperIsReplaced) {
  writeExecutable(at("prefix/bin/hello"), "old");
  writeWrappers(at("prefix"), "/d", "/i.sif", {{"hello", "/bin/hello"}});
  EXPECT_EQ(readFileIfPresent(at("prefix/bin/hello")).value_or(""),
            wrapperScript("/d", "/i.sif", {"hello", "/bin/hello"}));
}

}  // namespace
}  // namespace distrun::container
