// `distrun wrap`: the command line reaches the build checked and whole
// (the mistakes are in mistakes_test.cc; the build in distrun/container).
#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/cli/source_paths_testing.h"
#include "distrun/common/environment.h"
#include "distrun/container/wrap_options.h"

namespace distrun::cli {
namespace {

using testing::kDocs;

struct WrapRun {
  int operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .builtinSiteDir = "",
                   .exec = [](const auto&, const auto&) {},
                   .toolDir = "/opt/distrun/bin",
                   .wrapImage =
                       [this](const container::WrapOptions& o) {
                         options = o;
                         return 0;
                       }};
    return runCli(args, ctx);
  }

  MapEnvironment env{{"PATH", "/usr/bin:/bin"}, {"TMPDIR", "/tmp"}};
  std::ostringstream out, err;
  std::optional<container::WrapOptions> options;
};

TEST(WrapCommandTest, TheCheckedOptionsReachTheBuild) {
  WrapRun run;
  const std::string output = "/tmp/distrun-wrap-command-" + std::to_string(::getpid()) + ".sif";
  EXPECT_EQ(run({"wrap", "-o", output, "--dir", kDocs + ":/opt/docs", "--dir", kDocs + ":/srv/docs",
                 "--env", "A=1", "--path", "/opt/docs/bin", "--wrappers", "/tmp/wrapped",
                 "--wrap-path", "/opt/docs", "--format", "squashfs", "-q", "--force"}),
            0)
      << run.err.str();
  ASSERT_TRUE(run.options);
  const container::WrapOptions& o = *run.options;
  EXPECT_EQ(o.output, output);
  EXPECT_EQ(o.format, container::ImageFormat::kSquashfs);
  ASSERT_EQ(o.dirs.size(), 2u);
  EXPECT_EQ(o.dirs[1].destination, "/srv/docs");
  EXPECT_EQ(o.env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}}));
  EXPECT_EQ(o.paths, std::vector<std::string>{"/opt/docs/bin"});
  EXPECT_EQ(o.wrappers, "/tmp/wrapped");
  EXPECT_EQ(o.wrapPaths, std::vector<std::string>{"/opt/docs"});
  EXPECT_EQ(o.tmpdir, "/tmp");
  EXPECT_TRUE(o.quiet);
  EXPECT_TRUE(o.force);
  EXPECT_EQ(run.err.str(), "");
}

TEST(WrapCommandTest, AptPackagesWithTheSuiteAndMirrors) {
  WrapRun run;
  if (::access("/usr/bin/mmdebstrap", X_OK) != 0) GTEST_SKIP() << "needs mmdebstrap on PATH";
  EXPECT_EQ(
      run({"wrap", "-o", "/tmp/x.sif", "--apt", "python3-torch,python3-numpy", "--apt", "busybox",
           "--suite", "trixie", "--variant", "minbase", "--mirror", "http://mirror.site/debian"}),
      0)
      << run.err.str();
  ASSERT_TRUE(run.options);
  EXPECT_EQ(run.options->packages,
            (std::vector<std::string>{"python3-torch", "python3-numpy", "busybox"}));
  EXPECT_EQ(run.options->suite, "trixie");
  EXPECT_EQ(run.options->variant, "minbase");
  EXPECT_EQ(run.options->mirrors, std::vector<std::string>{"http://mirror.site/debian"});
  EXPECT_EQ(run.options->format, container::ImageFormat::kSif);
}

TEST(WrapCommandTest, HelpListsTheFlags) {
  WrapRun run;
  EXPECT_EQ(run({"wrap", "--help"}), 0);
  for (const char* flag : {"--apt", "--dir", "--base", "--format", "--env", "--path", "--wrappers",
                           "--wrap-path", "--tmpdir", "--force", "--quiet"}) {
    EXPECT_NE(run.out.str().find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace distrun::cli
