#pragma once

// The image `distrun plot` writes: its format, size, and how gnuplot makes
// it. Nothing here keeps state; every function is thread-safe.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "distrun/common/tool_process.h"

namespace distrun::plot {

enum class ImageFormat { kPng, kSvg };

struct ImageSize {
  int width = 0;  // pixels (SVG: its width and height attributes)
  int height = 0;
};

// The format `-o PATH` asks for, from its extension (.png or .svg, any
// case). UsageError "-o PATH: expected ..." for any other.
ImageFormat imageFormatFor(const std::string& path);

// "1200x800" (or "1200X800"): each side 200 to 10000 pixels. UsageError
// "--size TEXT: expected WIDTHxHEIGHT ..." otherwise.
ImageSize parseImageSize(const std::string& text);

// The gnuplot line choosing the terminal: pngcairo or svg, the size, a
// white background, plain (noenhanced) text so that names with _ or ^
// print as written.
std::string terminalLine(ImageFormat format, ImageSize size);

// Text as a gnuplot string constant: single-quoted, ' doubled, line breaks
// made spaces.
std::string gnuplotString(std::string_view text);

// A number for a gnuplot data line: "NaN" for a value that is not finite.
std::string gnuplotNumber(double value);

// Runs gnuplot: argv (argv[0] looked up on PATH) with `input` on its
// standard input (cli::CliContext::runTool, distrun::runTool); tests pass
// one of their own.
using GnuplotTool =
    std::function<ToolResult(const std::vector<std::string>& argv, const std::string& input)>;

// Runs `gnuplot` with `script` (which sets no output: the image comes on
// gnuplot's standard output) and writes the image to `path` atomically
// (writeFileAtomically): a failed plot leaves no file, nor a part of one.
// Throws Error kNotFound (127) when gnuplot is not installed, naming the
// Debian package; IoError (74) with gnuplot's own message when it fails or
// writes nothing, and when `path` cannot be written.
void renderImage(const std::string& script, const std::string& path, const GnuplotTool& run);

}  // namespace distrun::plot
