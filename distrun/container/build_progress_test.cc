#include "distrun/container/build_progress.h"

#include <sstream>

#include <gtest/gtest.h>

namespace distrun::container {
namespace {

TEST(BarPercentTest, TheLastBarDrawn) {
  const std::string mksquashfs =
      "Parallel mksquashfs: Using 2 processors\n"
      "Creating 4.0 filesystem on /tmp/x.sqfs, block size 131072.\n"
      "\r[=====/                       ]  120/348  34%"
      "\r[===================-         ]  300/348  86%";
  EXPECT_EQ(lastBarPercent(mksquashfs), 86);
  EXPECT_EQ(lastBarPercent(mksquashfs + "\r[===========================-]  348/348 100%\n\n"
                                        "Exportable Squashfs 4.0 filesystem, zstd compressed"),
            100);
}

TEST(BarPercentTest, NoneBeforeTheFirstBarOrInAHalfDrawnOne) {
  EXPECT_EQ(lastBarPercent("Parallel unsquashfs: Using 2 processors\n322 inodes"), std::nullopt);
  EXPECT_EQ(lastBarPercent("\r[====        ]  62"), std::nullopt);
  EXPECT_EQ(lastBarPercent("\r[==  ]  1/9  11%\r[====        ]  62"), 11);
}

TEST(BarPercentTest, OnlyTheLastFewHundredBytesAreRead) {
  std::string output = "\r[==  ]  1/9  11%" + std::string(4000, ' ');
  EXPECT_EQ(lastBarPercent(output), std::nullopt);
}

TEST(DebootstrapPhaseTest, TheLastWholeStatusLine) {
  const std::string output =
      "I: automatically chosen mode: root\n"
      "I: running apt-get update...\n"
      "Reading package lists...\n"
      "I: downloading packages with apt...\n"
      "I: extracting arch";
  EXPECT_EQ(lastDebootstrapPhase(output), "downloading packages with apt");
  EXPECT_EQ(lastDebootstrapPhase(output + "ives...\n"), "extracting archives");
  EXPECT_EQ(lastDebootstrapPhase("W: a warning\n"), std::nullopt);
  EXPECT_EQ(lastDebootstrapPhase(""), std::nullopt);
}

struct FakeClock {
  double seconds = 0;
  std::function<double()> function() {
    return [this] { return seconds; };
  }
};

TEST(ProgressLineTest, OnATerminalOneLineIsRewritten) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, false, clock.function());
  line.show("distrun wrap: mksquashfs: 10%");
  clock.seconds = 0.05;
  line.show("distrun wrap: mksquashfs: 15%");  // at most 10 redraws a second
  clock.seconds = 0.2;
  line.show("distrun wrap: mksquashfs: 20%");
  line.clear();
  EXPECT_EQ(err.str(),
            "\rdistrun wrap: mksquashfs: 10%\x1b[K\rdistrun wrap: mksquashfs: 20%\x1b[K\r\x1b[K");
  const std::string before = err.str();
  line.clear();  // nothing on screen: nothing written
  EXPECT_EQ(err.str(), before);
}

TEST(ProgressLineTest, OnATerminalTheLineIsCutToItsWidth) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, false, clock.function(), 5.0, [] { return 20; });
  line.show("distrun wrap: mmdebstrap: bookworm apt with python3-torch", true);
  EXPECT_EQ(err.str(), "\rdistrun wrap: mmdeb\x1b[K");  // one column less than the width
}

TEST(ProgressLineTest, ElsewhereALineEveryFewSeconds) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, false, false, clock.function(), 5.0);
  line.show("a");  // the first at once
  clock.seconds = 2;
  line.show("b");  // too soon
  clock.seconds = 5;
  line.show("c");
  clock.seconds = 6;
  line.show("d", true);  // a new step: at once
  line.clear();
  EXPECT_EQ(err.str(), "a\nc\nd\n");
}

TEST(ProgressLineTest, QuietPrintsNothing) {
  std::ostringstream err;
  FakeClock clock;
  ProgressLine line(err, true, true, clock.function());
  line.show("a", true);
  line.clear();
  EXPECT_EQ(err.str(), "");
}

TEST(BuildReportTest, BeforeAfterTimeAndWrappers) {
  BuildReport report;
  report.staged = {6263, 146 * 1024 * 1024};
  report.image = "/images/env.sif";
  report.format = ImageFormat::kSif;
  report.imageBytes = 48 * 1024 * 1024;
  report.seconds = 62.34;
  report.steps = {{"mmdebstrap", 56.61}, {"cp", 0.42}, {"mksquashfs", 5.02}, {"SIF", 0.11}};
  report.wrappers = 12;
  report.wrapperDir = "/opt/wrapped/bin";
  EXPECT_EQ(formatReport(report),
            "distrun wrap: before: 6263 files and folders, 146.0 MiB\n"
            "distrun wrap: after: 1 file, /images/env.sif (SIF), 48.0 MiB: 32.9% of the bytes "
            "before\n"
            "distrun wrap: built in 62.3 s: mmdebstrap 56.6 s, cp 0.4 s, mksquashfs 5.0 s, SIF "
            "0.1 s\n"
            "distrun wrap: wrappers: 12 programs in /opt/wrapped/bin\n");
}

TEST(BuildReportTest, WithoutWrappersAndEmptyTree) {
  BuildReport report;
  report.image = "/i.sqfs";
  report.format = ImageFormat::kSquashfs;
  report.imageBytes = 4096;
  report.steps = {{"mksquashfs", 0.04}};
  EXPECT_EQ(formatReport(report),
            "distrun wrap: before: 0 files and folders, 0.0 MiB\n"
            "distrun wrap: after: 1 file, /i.sqfs (SquashFS), 0.0 MiB: 0.0% of the bytes before\n"
            "distrun wrap: built in 0.0 s: mksquashfs 0.0 s\n");
}

}  // namespace
}  // namespace distrun::container
