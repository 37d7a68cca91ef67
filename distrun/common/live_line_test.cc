#include "distrun/common/live_line.h"

#include <sstream>

#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun {
namespace {

struct Screen {
  std::ostringstream out;
  double now = 0;
  int columns = 40;
  LiveLineOptions options(StatusMode mode) {
    LiveLineOptions o;
    o.mode = mode;
    o.columns = [this] { return columns; };
    o.now = [this] { return now; };
    return o;
  }
  // What was written since the last call.
  std::string take() {
    std::string s = out.str();
    out.str("");
    return s;
  }
};

TEST(StatusModeTest, NamesAndTheTerminalRule) {
  EXPECT_EQ(parseStatusMode("auto"), StatusMode::kAuto);
  EXPECT_EQ(parseStatusMode("line"), StatusMode::kLine);
  EXPECT_EQ(parseStatusMode("plain"), StatusMode::kPlain);
  EXPECT_EQ(parseStatusMode("none"), StatusMode::kNone);
  try {
    parseStatusMode("bar");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--status 'bar': expected auto, line, plain or none");
    EXPECT_EQ(e.exitCode(), ExitCode::kUsage);
  }
  EXPECT_EQ(resolveStatusMode(StatusMode::kAuto, true), StatusMode::kLine);
  EXPECT_EQ(resolveStatusMode(StatusMode::kAuto, false), StatusMode::kPlain);
  EXPECT_EQ(resolveStatusMode(StatusMode::kNone, true), StatusMode::kNone);
  EXPECT_EQ(resolveStatusMode(StatusMode::kLine, false), StatusMode::kLine);
}

TEST(StatusModeTest, ColumnsFromTheTerminalElseColumnsElse80) {
  const int notATerminal = -1;
  EXPECT_EQ(terminalColumns(notATerminal, MapEnvironment{{"COLUMNS", "132"}}), 132);
  EXPECT_EQ(terminalColumns(notATerminal, MapEnvironment{{"COLUMNS", "wide"}}), 80);
  EXPECT_EQ(terminalColumns(notATerminal, MapEnvironment{}), 80);
}

TEST(FitToWidthTest, WholePartsFromTheEndThenACut) {
  const std::string text = "epoch 1/2  step 3/4  loss 0.5000";
  EXPECT_EQ(fitToWidth(text, 80), text);
  EXPECT_EQ(fitToWidth(text, static_cast<int>(text.size())), text);
  EXPECT_EQ(fitToWidth(text, 25), "epoch 1/2  step 3/4");
  EXPECT_EQ(fitToWidth(text, 12), "epoch 1/2");
  EXPECT_EQ(fitToWidth(text, 5), "epoch");
  EXPECT_EQ(fitToWidth(text, 0), "");
  EXPECT_EQ(fitToWidth("é très long", 6), "é très");  // code points, not bytes
}

TEST(LiveLineTest, DrawnInPlaceFittedToOneColumnLessThanTheTerminal) {
  Screen s;
  s.columns = 21;
  LiveLine line(s.out, s.options(StatusMode::kLine));
  line.show("epoch 1/2  step 3/4  loss 0.5000");
  EXPECT_EQ(s.take(), "\repoch 1/2  step 3/4\x1b[K");
  EXPECT_TRUE(line.onScreen());
}

TEST(LiveLineTest, AtMostTenRedrawsASecond) {
  Screen s;
  LiveLine line(s.out, s.options(StatusMode::kLine));
  line.show("step 1");
  s.now = 0.05;
  line.show("step 2");  // held back
  line.show("step 2");
  EXPECT_EQ(s.take(), "\rstep 1\x1b[K");
  EXPECT_EQ(line.nextDue(), 0.1);
  line.tick();
  EXPECT_EQ(s.take(), "");
  s.now = 0.1;
  line.tick();
  EXPECT_EQ(s.take(), "\rstep 2\x1b[K");
  EXPECT_EQ(line.nextDue(), std::nullopt);
  line.show("step 2");  // the same text: nothing to draw
  line.show("step 3", true);
  EXPECT_EQ(s.take(), "\rstep 3\x1b[K");
}

// The agent's order for each line of a worker: erase, the line, redraw.
TEST(LiveLineTest, ErasedBeforeOutputAndRedrawnAtOnceAfterIt) {
  Screen s;
  LiveLine line(s.out, s.options(StatusMode::kLine));
  line.show("step 1");
  line.clear();
  s.out << "[0:0] hello\n";
  line.tick();
  EXPECT_EQ(s.take(), "\rstep 1\x1b[K\r\x1b[K[0:0] hello\n\rstep 1\x1b[K");
  line.clear();
  line.clear();  // nothing on screen: nothing written
  EXPECT_EQ(s.take(), "\r\x1b[K");
}

TEST(LiveLineTest, HiddenAndErasedAtTheEnd) {
  Screen s;
  {
    LiveLine line(s.out, s.options(StatusMode::kLine));
    line.show("step 1");
    line.hide();
    line.tick();  // nothing left to draw
    EXPECT_EQ(line.nextDue(), std::nullopt);
    line.show("step 2");
    line.show("");  // the same as hide()
    line.show("step 3");
  }
  EXPECT_EQ(s.take(), "\rstep 1\x1b[K\r\x1b[K\rstep 2\x1b[K\r\x1b[K\rstep 3\x1b[K\r\x1b[K");
}

TEST(LiveLineTest, PlainLinesWithoutControlCharactersAtALowRate) {
  Screen s;
  LiveLineOptions o = s.options(StatusMode::kPlain);
  o.plainPrefix = "distrun: ";
  LiveLine line(s.out, o);
  line.show("step 1");  // none before the first interval passed
  line.clear();
  EXPECT_EQ(line.nextDue(), 30);
  s.now = 29;
  line.tick();
  EXPECT_EQ(s.take(), "");
  s.now = 30;
  line.show("step 2");
  s.now = 45;
  line.show("step 3");
  line.tick();
  s.now = 60;
  line.tick();  // the same text again: the job is still there
  line.show("step 4", true);
  EXPECT_EQ(s.take(), "distrun: step 2\ndistrun: step 3\ndistrun: step 4\n");
}

TEST(LiveLineTest, PlainFirstLineAtOnceWhenAsked) {
  Screen s;
  LiveLineOptions o = s.options(StatusMode::kPlain);
  o.plainFirstAtOnce = true;
  o.plainInterval = 5;
  LiveLine line(s.out, o);
  line.show("a");
  s.now = 2;
  line.show("b");
  s.now = 5;
  line.show("c");
  EXPECT_EQ(s.take(), "a\nc\n");
}

TEST(LiveLineTest, NoneWritesNothing) {
  Screen s;
  {
    LiveLine line(s.out, s.options(StatusMode::kNone));
    line.show("step 1", true);
    line.tick();
    line.clear();
    EXPECT_EQ(line.nextDue(), std::nullopt);
  }
  EXPECT_EQ(s.take(), "");
}

}  // namespace
}  // namespace distrun
