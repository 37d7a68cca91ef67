#include "distrun/common/command_line.h"

#include <sstream>

#include <gtest/gtest.h>

namespace distrun {
namespace {

// What parseAndRun printed and returned for `args`, `body` run after a
// parse that knows one flag, --count.
struct Ran {
  int code = 0;
  std::string out, err;
};

template <class Body>
Ran run(const std::vector<std::string>& args, Body body) {
  CLI::App app("a program", "prog");
  int count = 0;
  app.add_option("--count", count);
  std::ostringstream out, err;
  const int code = parseAndRun(app, args, "distrun prog", out, err, body);
  return {code, out.str(), err.str()};
}

TEST(ParseAndRunTest, ABodysExitStatusIsReturned) {
  const Ran r = run({"--count", "2"}, [] { return 3; });
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "");
}

TEST(ParseAndRunTest, AParseErrorIsAUsageErrorPointingAtHelp) {
  const Ran r = run({"--count", "two"}, [] { return 0; });
  EXPECT_EQ(r.code, 64);
  EXPECT_EQ(r.err.rfind("distrun: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(see 'distrun prog --help')\n"), std::string::npos) << r.err;
}

TEST(ParseAndRunTest, AnUnknownFlagIsNamedWithTheNearestKnownOne) {
  const Ran near = run({"--count", "2", "--cuont=3"}, [] { return 0; });
  EXPECT_EQ(near.code, 64);
  EXPECT_EQ(near.err, "distrun: error: unknown flag --cuont: did you mean --count?\n");
  const Ran far = run({"extra", "-x"}, [] { return 0; });
  EXPECT_EQ(far.err, "distrun: error: unknown flag -x (see 'distrun prog --help')\n");
}

TEST(ParseAndRunTest, AnErrorIsItsOneLineAndItsExitCode) {
  const Ran r = run({}, []() -> int { throw IoError("--metrics m.json: the disk is full"); });
  EXPECT_EQ(r.code, 74);
  EXPECT_EQ(r.err, "distrun: error: --metrics m.json: the disk is full\n");
}

// Its line is out already (a rank repeating rank 0's error): not twice.
TEST(ParseAndRunTest, AReportedErrorIsItsExitCodeAlone) {
  const Ran r = run({}, []() -> int { throw ReportedError(ExitCode::kIo, "rank 0: full"); });
  EXPECT_EQ(r.code, 74);
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace distrun
