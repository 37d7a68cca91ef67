#include "distrun/plot/image_output.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::plot {

namespace {

constexpr int kMinSide = 200;
constexpr int kMaxSide = 10000;
constexpr int kNotFound = 127;  // runTool's exit code for a program that is not there

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

UsageError badSize(const std::string& text) {
  return UsageError(
      fmt::format("--size {}: expected WIDTHxHEIGHT in pixels, each {} to {} (--size 1200x800)",
                  text, kMinSide, kMaxSide));
}

int side(const std::string& digits, const std::string& text) {
  if (digits.empty() || digits.size() > 5 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) {
    throw badSize(text);
  }
  const int value = std::stoi(digits);
  if (value < kMinSide || value > kMaxSide) throw badSize(text);
  return value;
}

// What gnuplot said that explains its failure: the line naming the script
// line at fault ("line 12: ..."), else the first that is not a warning.
std::string gnuplotMessage(const ToolResult& result) {
  std::string first;
  for (const std::string& raw : split(result.err, '\n')) {
    const std::string line(trim(raw));
    if (line.empty() || line == "^") continue;
    if (line.rfind("line ", 0) == 0 || line.find("\" line ") != std::string::npos) return line;
    if (first.empty() && line.rfind("Warning:", 0) != 0) first = line;
  }
  if (!first.empty()) return first;
  return fmt::format("it exited with status {} and said nothing", result.exitCode);
}

}  // namespace

ImageFormat imageFormatFor(const std::string& path) {
  const std::string extension = lowered(std::filesystem::path(path).extension().string());
  if (extension == ".png") return ImageFormat::kPng;
  if (extension == ".svg") return ImageFormat::kSvg;
  throw UsageError(fmt::format(
      "-o {}: expected a file name ending in .png or .svg (the image's format follows it)", path));
}

ImageSize parseImageSize(const std::string& text) {
  const size_t x = lowered(text).find('x');
  if (x == std::string::npos) throw badSize(text);
  return {side(text.substr(0, x), text), side(text.substr(x + 1), text)};
}

std::string terminalLine(ImageFormat format, ImageSize size) {
  const char* terminal = format == ImageFormat::kPng ? "pngcairo" : "svg";
  return fmt::format(
      "set terminal {} size {},{} noenhanced font 'DejaVu Sans,10' background rgb 'white'\n",
      terminal, size.width, size.height);
}

std::string gnuplotString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else {
      out += (c == '\n' || c == '\r') ? ' ' : c;
    }
  }
  return out + "'";
}

std::string gnuplotNumber(double value) {
  return std::isfinite(value) ? fmt::format("{:.9g}", value) : "NaN";
}

void renderImage(const std::string& script, const std::string& path, const GnuplotTool& run) {
  const ToolResult result = run({"gnuplot"}, script);
  if (result.exitCode == kNotFound) {
    throw Error(ExitCode::kNotFound,
                "plot: gnuplot not found on PATH: install the Debian package gnuplot-nox "
                "(scripts/install-deps does)");
  }
  if (result.exitCode != 0) {
    throw IoError(
        fmt::format("plot: gnuplot failed (exit {}): {}", result.exitCode, gnuplotMessage(result)));
  }
  if (result.out.empty()) {
    throw IoError("plot: gnuplot wrote no image: " + gnuplotMessage(result));
  }
  writeFileAtomically(path, result.out, "-o");
}

}  // namespace distrun::plot
