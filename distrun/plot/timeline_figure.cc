#include "distrun/plot/timeline_figure.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <fmt/format.h>

namespace distrun::plot {

namespace {

constexpr int kWidth = 1600;
constexpr int kLanePixels = 34;
constexpr int kFramePixels = 170;  // title, axis, key
constexpr int kMinHeight = 400, kMaxHeight = 10000;
constexpr size_t kMaxRows = 5;       // a lane's rows of nested spans; deeper ones share the last
constexpr size_t kNameChars = 40;    // a span's name is cut to this
constexpr double kCharPixels = 6.5;  // of the names' 8-point font
constexpr double kMinRowPixels = 11;
constexpr double kTouchMs = 1e-6;  // a span starting this close to one's end follows it

const std::map<std::string, std::string> kCategoryColours = {
    {"compute", "#4E79A7"},   {"comm", "#F28E2B"},     {"data", "#59A14F"}, {"launcher", "#9C755F"},
    {"optimizer", "#B07AA1"}, {"snapshot", "#E15759"}, {"wait", "#BAB0AC"}, {"", "#999999"},
};
constexpr std::array<const char*, 6> kOtherColours = {"#76B7B2", "#EDC948", "#FF9DA7",
                                                      "#8CD17D", "#D37295", "#499894"};

// Where the plot area lies in the image, and its scale.
struct Geometry {
  double left = 0, right = 0;  // screen fractions
  double pixelsPerMs = 0;
  double lanePixels = 0;
};

Geometry geometryOf(const Timeline& t, double fromMs, double toMs, ImageSize size) {
  size_t longest = 0;
  for (const std::string& lane : t.lanes) longest = std::max(longest, lane.size());
  Geometry g;
  g.left = std::clamp((static_cast<double>(longest) * 7 + 30) / size.width, 0.06, 0.45);
  g.right = 0.98;
  g.pixelsPerMs = (g.right - g.left) * size.width / std::max(toMs - fromMs, 1e-9);
  g.lanePixels = std::max(
      1.0, static_cast<double>(size.height - kFramePixels) / static_cast<double>(t.lanes.size()));
  return g;
}

// Each span's row in its lane: the first row free at its start, so that a
// span nested in another (which starts earlier) lies below it.
std::vector<size_t> rowsOf(const Timeline& t) {
  std::vector<size_t> rows(t.spans.size());
  std::vector<double> rowEnds;
  size_t lane = t.spans.empty() ? 0 : t.spans.front().lane;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    if (s.lane != lane) rowEnds.clear();
    lane = s.lane;
    size_t row = 0;
    while (row < rowEnds.size() && rowEnds[row] > s.startMs + kTouchMs) ++row;
    if (row == rowEnds.size()) rowEnds.push_back(0);
    rowEnds[row] = s.endMs;
    rows[i] = std::min(row, kMaxRows - 1);
  }
  return rows;
}

std::vector<size_t> rowsPerLane(const Timeline& t, const std::vector<size_t>& rows) {
  std::vector<size_t> count(t.lanes.size(), 1);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    count[t.spans[i].lane] = std::max(count[t.spans[i].lane], rows[i] + 1);
  }
  return count;
}

std::vector<std::string> categoriesOf(const Timeline& t) {
  std::set<std::string> distinct;
  for (const Span& s : t.spans) distinct.insert(s.category);
  return {distinct.begin(), distinct.end()};
}

// A span's name as a datablock's quoted string: no quote, backslash or
// control character, at most kNameChars.
std::string labelText(const std::string& name) {
  std::string text = name.substr(0, kNameChars);
  if (text.size() < name.size()) {  // no UTF-8 sequence cut in two
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) {
      text.pop_back();
    }
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
  }
  for (char& c : text) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return "\"" + text + "\"";
}

}  // namespace

namespace {

int rgb(const std::string& colour) { return std::stoi(colour.substr(1), nullptr, 16); }

// The boxes ($spans: x y xlow xhigh ylow yhigh rgb) and the names that fit
// in theirs ($names: x y "name").
struct Blocks {
  std::string spans = "$spans << EOD\n", names;
};

Blocks blocksOf(const Timeline& t, const Geometry& g) {
  const std::vector<size_t> rows = rowsOf(t);
  const std::vector<size_t> perLane = rowsPerLane(t, rows);
  const std::vector<std::string> categories = categoriesOf(t);
  Blocks b;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    const double height = 0.84 / static_cast<double>(perLane[s.lane]);
    const double low = static_cast<double>(s.lane) - 0.42 + static_cast<double>(rows[i]) * height;
    const double high = low + height * 0.9;
    // At least a pixel wide, and a pixel of gap before the next span.
    const double pixel = 1 / g.pixelsPerMs;
    const double end =
        std::max(s.endMs - (s.endMs - s.startMs > 3 * pixel ? pixel : 0), s.startMs + pixel);
    b.spans += fmt::format("{} {} {} {} {} {} {}\n", gnuplotNumber((s.startMs + end) / 2), s.lane,
                           gnuplotNumber(s.startMs), gnuplotNumber(end), gnuplotNumber(low),
                           gnuplotNumber(high), rgb(categoryColour(s.category, categories)));
    const double fits = static_cast<double>(std::min(s.name.size(), kNameChars)) * kCharPixels + 8;
    if ((s.endMs - s.startMs) * g.pixelsPerMs < fits) continue;
    if (height * 0.9 * g.lanePixels < kMinRowPixels || s.name.empty()) continue;
    b.names += fmt::format("{} {} {}\n", gnuplotNumber((s.startMs + s.endMs) / 2),
                           gnuplotNumber((low + high) / 2), labelText(s.name));
  }
  b.spans += "EOD\n";
  if (!b.names.empty()) b.names = "$names << EOD\n" + b.names + "EOD\n";
  return b;
}

std::string laneTics(const Timeline& t) {
  std::string tics;
  for (size_t i = 0; i < t.lanes.size(); ++i) {
    tics += fmt::format("{}{} {}", i ? ", " : "", gnuplotString(t.lanes[i]), i);
  }
  return "set ytics (" + tics + ") nomirror scale 0\n";
}

std::string axes(const Timeline& t, double fromMs, double toMs, const Geometry& g) {
  return fmt::format(
      "set title {}\nset xlabel 'milliseconds from the first span of the trace'\n"
      "set xrange [{}:{}]\nset yrange [{}:-0.5]\nset xtics nomirror\nset grid xtics\n"
      "set lmargin at screen {:.4f}\nset rmargin at screen {:.4f}\n"
      "set style fill solid 1.0 noborder\nset key below horizontal\nset bmargin 5\n",
      gnuplotString(fmt::format("trace {}: {} spans on {} lanes, {:g} to {:g} ms", t.path,
                                t.spans.size(), t.lanes.size(), fromMs, toMs)),
      gnuplotNumber(fromMs), gnuplotNumber(toMs),
      gnuplotNumber(static_cast<double>(t.lanes.size()) - 0.5), g.left, g.right);
}

std::string plotLine(const Timeline& t, bool withNames) {
  std::string line = "plot $spans using 1:2:3:4:5:6:7 with boxxyerror lc rgb variable notitle";
  const std::vector<std::string> categories = categoriesOf(t);
  for (const std::string& c : categories) {
    line +=
        fmt::format(", \\\n     keyentry with boxes fc rgb '{}' title {}",
                    categoryColour(c, categories), gnuplotString(c.empty() ? "(no category)" : c));
  }
  if (withNames) {
    line += ", \\\n     $names using 1:2:3 with labels font ',8' tc rgb '#1a1a1a' notitle";
  }
  return line + "\n";
}

}  // namespace

ImageSize timelineSize(size_t lanes) {
  const size_t height = kFramePixels + lanes * kLanePixels;
  return {kWidth, static_cast<int>(std::clamp<size_t>(height, kMinHeight, kMaxHeight))};
}

std::string categoryColour(const std::string& category,
                           const std::vector<std::string>& categories) {
  const auto known = kCategoryColours.find(category);
  if (known != kCategoryColours.end()) return known->second;
  size_t other = 0;
  for (const std::string& c : categories) {
    if (c == category) break;
    if (!kCategoryColours.contains(c)) ++other;
  }
  return kOtherColours[other % kOtherColours.size()];
}

std::string timelineFigureScript(const Timeline& timeline, double fromMs, double toMs,
                                 ImageFormat format, ImageSize size) {
  const Geometry g = geometryOf(timeline, fromMs, toMs, size);
  const Blocks blocks = blocksOf(timeline, g);
  return terminalLine(format, size) + blocks.spans + blocks.names +
         axes(timeline, fromMs, toMs, g) + laneTics(timeline) +
         plotLine(timeline, !blocks.names.empty());
}

}  // namespace distrun::plot
