#pragma once

// What `distrun wrap` tells the user while it builds and when it is done:
// the progress of the tools it runs, read from their output, on one line
// (rewritten in place on a terminal, a line every few seconds otherwise),
// and the report of the tree staged and the image written.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "distrun/common/live_line.h"
#include "distrun/container/image_file.h"
#include "distrun/container/staging_tree.h"

namespace distrun::container {

// The percentage of the last progress bar mksquashfs or unsquashfs drew in
// `output` ("\r[=====/     ]  626/670  93%"); nullopt when there is none.
std::optional<int> lastBarPercent(std::string_view output);

// The last status line mmdebstrap printed in `output` ("I: downloading
// packages with apt..." gives "downloading packages with apt"); nullopt
// when there is none.
std::optional<std::string> lastDebootstrapPhase(std::string_view output);

// One line of progress on `err`, the LiveLine of every distrun status
// line (live_line.h). On a terminal each show() rewrites the line in place
// (carriage return, the text cut to the terminal's width, erase to its
// end; at most 10 times a second, or at once with `now`) and clear()
// erases it; otherwise show() prints a line when `interval` seconds have
// passed since the last one printed (the first, and one shown with `now`,
// at once), and clear() prints nothing. With `quiet` it prints nothing at
// all. `columns`: the terminal's width (default: stderr's). Not
// thread-safe.
class ProgressLine {
 public:
  ProgressLine(std::ostream& err, bool terminal, bool quiet, std::function<double()> now,
               double interval = 5.0, std::function<int()> columns = {});
  void show(const std::string& text, bool now = false) { line_.show(text, now); }
  void clear() { line_.clear(); }

 private:
  LiveLine line_;
};

// What a finished build did, for the report.
struct BuildReport {
  TreeStats staged;   // the tree before packing
  std::string image;  // absolute path
  ImageFormat format = ImageFormat::kSif;
  uint64_t imageBytes = 0;
  double seconds = 0;                                 // the whole build
  std::vector<std::pair<std::string, double>> steps;  // tool or step, seconds
  size_t wrappers = 0;
  std::string wrapperDir;  // PREFIX/bin; "" without --wrappers
};

// The report's lines, each starting "distrun wrap: ": before (files and
// folders, bytes), after (one file, its size and the ratio), the build
// time with each step's, and the wrappers written.
std::string formatReport(const BuildReport& report);

}  // namespace distrun::container
