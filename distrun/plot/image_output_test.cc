#include "distrun/plot/image_output.h"

#include <gtest/gtest.h>

#include "distrun/plot/plot_testing.h"

namespace distrun::plot {
namespace {

using testing::errorOf;

TEST(ImageFormatTest, FollowsTheExtensionInAnyCase) {
  EXPECT_EQ(imageFormatFor("out/fig.png"), ImageFormat::kPng);
  EXPECT_EQ(imageFormatFor("FIG.PNG"), ImageFormat::kPng);
  EXPECT_EQ(imageFormatFor("fig.svg"), ImageFormat::kSvg);
}

TEST(ImageFormatTest, AnyOtherExtensionIsAUsageError) {
  const std::string tail =
      ": expected a file name ending in .png or .svg (the image's format "
      "follows it)";
  EXPECT_EQ(errorOf([] { imageFormatFor("fig.jpg"); }),
            std::make_pair("-o fig.jpg" + tail, ExitCode::kUsage));
  EXPECT_EQ(errorOf([] { imageFormatFor("figure"); }),
            std::make_pair("-o figure" + tail, ExitCode::kUsage));
}

TEST(ImageSizeTest, IsWidthByHeight) {
  EXPECT_EQ(parseImageSize("1200x800").width, 1200);
  EXPECT_EQ(parseImageSize("1200x800").height, 800);
  EXPECT_EQ(parseImageSize("640X480").height, 480);
}

TEST(ImageSizeTest, AnythingElseIsAUsageErrorNamingTheFlag) {
  for (const std::string text : {"big", "1200x", "x800", "1200x800x2", "100x800", "1200x10001",
                                 "-640x480", "640x 480", "999999x480"}) {
    EXPECT_EQ(errorOf([&text] { parseImageSize(text); }),
              std::make_pair("--size " + text +
                                 ": expected WIDTHxHEIGHT in pixels, each 200 to 10000 (--size "
                                 "1200x800)",
                             ExitCode::kUsage))
        << text;
  }
}

TEST(GnuplotTextTest, QuotesAndNumbers) {
  EXPECT_EQ(gnuplotString("it's a_b"), "'it''s a_b'");
  EXPECT_EQ(gnuplotString("two\nlines"), "'two lines'");
  EXPECT_EQ(gnuplotNumber(0.5), "0.5");
  EXPECT_EQ(gnuplotNumber(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(gnuplotNumber(std::numeric_limits<double>::infinity()), "NaN");
}

TEST(TerminalTest, ChoosesTheTerminalAndSize) {
  EXPECT_EQ(terminalLine(ImageFormat::kPng, {640, 480}),
            "set terminal pngcairo size 640,480 noenhanced font 'DejaVu Sans,10' background rgb "
            "'white'\n");
  EXPECT_EQ(terminalLine(ImageFormat::kSvg, {700, 500}).substr(0, 30),
            "set terminal svg size 700,500 ");
}

// A runner that answers as gnuplot would, and records what it was given.
struct FakeGnuplot {
  explicit FakeGnuplot(ToolResult a) : answer(std::move(a)) {}
  ToolResult answer;
  std::vector<std::string> argv;
  std::string input;
  GnuplotTool runner() {
    return [this](const std::vector<std::string>& a, const std::string& i) {
      argv = a;
      input = i;
      return answer;
    };
  }
};

TEST(RenderImageTest, WritesWhatGnuplotDrewAndNothingBeside) {
  testing::TempDir tmp;
  FakeGnuplot gnuplot(ToolResult{0, "IMAGE BYTES", ""});
  renderImage("plot x\n", tmp.file("fig.png"), gnuplot.runner());
  EXPECT_EQ(gnuplot.argv, std::vector<std::string>{"gnuplot"});
  EXPECT_EQ(gnuplot.input, "plot x\n");
  EXPECT_EQ(testing::readText(tmp.file("fig.png")), "IMAGE BYTES");
  EXPECT_EQ(tmp.listing(), "fig.png");
}

TEST(RenderImageTest, AMissingGnuplotNamesThePackage) {
  testing::TempDir tmp;
  FakeGnuplot gnuplot(ToolResult{127, "", ""});
  EXPECT_EQ(errorOf([&] { renderImage("", tmp.file("fig.png"), gnuplot.runner()); }),
            std::make_pair(std::string("plot: gnuplot not found on PATH: install the Debian "
                                       "package gnuplot-nox (scripts/install-deps does)"),
                           ExitCode::kNotFound));
  EXPECT_EQ(tmp.listing(), "");
}

// gnuplot's warnings come before its error; the error is what is said, and
// the image already there stays as it was.
TEST(RenderImageTest, AFailingGnuplotIsAnIoErrorWithItsMessage) {
  testing::TempDir tmp;
  testing::writeText(tmp.file("fig.png"), "OLD");
  FakeGnuplot gnuplot(
      ToolResult{1, "PARTIAL",
                 "Warning: empty y range [1:1], adjusting to [0.99:1.01]\n"
                 "plot $nope using 1:2\n        ^\n         line 0: no datablock named "
                 "$nope\n\n"});
  EXPECT_EQ(errorOf([&] { renderImage("", tmp.file("fig.png"), gnuplot.runner()); }),
            std::make_pair(std::string("plot: gnuplot failed (exit 1): line 0: no datablock "
                                       "named $nope"),
                           ExitCode::kIo));
  EXPECT_EQ(testing::readText(tmp.file("fig.png")), "OLD");
  EXPECT_EQ(tmp.listing(), "fig.png");
}

TEST(RenderImageTest, NoImageIsAnIoError) {
  testing::TempDir tmp;
  FakeGnuplot silent(ToolResult{0, "", ""});
  EXPECT_EQ(errorOf([&] { renderImage("", tmp.file("fig.png"), silent.runner()); }),
            std::make_pair(std::string("plot: gnuplot wrote no image: it exited with status 0 "
                                       "and said nothing"),
                           ExitCode::kIo));
  EXPECT_EQ(tmp.listing(), "");
}

// The real gnuplot's own words reach the message.
TEST(RenderImageTest, TheRealGnuplotsErrorIsPassedOn) {
  DISTRUN_NEEDS_GNUPLOT();
  testing::TempDir tmp;
  const auto [message, code] = errorOf([&] {
    renderImage(terminalLine(ImageFormat::kPng, {300, 200}) + "plot $nope using 1:2\n",
                tmp.file("fig.png"), runTool);
  });
  EXPECT_EQ(message, "plot: gnuplot failed (exit 1): line 0: no datablock named $nope");
  EXPECT_EQ(code, ExitCode::kIo);
  EXPECT_EQ(tmp.listing(), "");
}

}  // namespace
}  // namespace distrun::plot
