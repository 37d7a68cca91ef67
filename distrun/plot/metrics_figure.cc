#include "distrun/plot/metrics_figure.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

namespace distrun::plot {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Okabe and Ito's colours, told apart with every kind of colour blindness.
constexpr std::array<const char*, 8> kColours = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                 "#E69F00", "#56B4E9", "#000000", "#F0E442"};
constexpr std::array<int, 5> kPoints = {7, 5, 9, 11, 13};
constexpr double kLegendCharPixels = 7;  // of the 10-point font
// Columns of a run's data block (1-based, as gnuplot counts).
constexpr int kTrainLoss = 2, kTestLoss = 3, kAccuracy = 4, kSamples = 5, kFirstWait = 6;

using Rows = std::vector<std::vector<double>>;

struct Series {
  std::string block;  // "$run0"
  int column = 0;
  std::string title;
  std::string colour;
  int dash = 1;
  int point = 7;
};

struct Panel {
  Panel(std::string t, std::string y, std::string range, std::string format, std::string k,
        std::string n)
      : title(std::move(t)),
        ylabel(std::move(y)),
        yrange(std::move(range)),
        yformat(std::move(format)),
        key(std::move(k)),
        nothing(std::move(n)) {}

  std::string title, ylabel, yrange, yformat, key;
  std::string nothing;  // said in the panel when it has no series
  std::vector<Series> series;
  std::vector<std::string> notes;  // in the legend: a compared run the panel lacks
};

// The most, median and least waiting rank's shares when there are too many
// ranks for a line each.
std::vector<double> waitValues(const train::EpochMetrics& e, size_t ranks, size_t drawnEach) {
  std::vector<double> shares = waitShares(e, ranks);
  if (ranks <= drawnEach) return shares;
  std::vector<double> finite;
  std::copy_if(shares.begin(), shares.end(), std::back_inserter(finite),
               [](double v) { return std::isfinite(v); });
  if (finite.empty()) return {kNaN, kNaN, kNaN};
  std::sort(finite.begin(), finite.end());
  return {finite.back(), finite[finite.size() / 2], finite.front()};
}

std::vector<std::string> waitTitles(size_t ranks, size_t drawnEach) {
  if (ranks > drawnEach) {
    return {"most waiting rank", "median rank", "least waiting rank (the slowest)"};
  }
  std::vector<std::string> titles;
  for (size_t r = 0; r < ranks; ++r) titles.push_back(fmt::format("rank {}", r));
  return titles;
}

Rows rowsOf(const MetricsRun& run, size_t drawnEach) {
  const size_t ranks = ranksWithWaits(run);
  Rows rows;
  for (const train::EpochMetrics& e : run.epochs) {
    std::vector<double> row = {static_cast<double>(e.epoch), e.trainLoss, e.testLoss.value_or(kNaN),
                               e.testAccuracy ? *e.testAccuracy * 100 : kNaN, e.samplesPerSecond};
    for (double w : waitValues(e, ranks, drawnEach)) row.push_back(w);
    rows.push_back(std::move(row));
  }
  return rows;
}

bool hasValues(const Rows& rows, int column) {
  return std::any_of(rows.begin(), rows.end(), [column](const std::vector<double>& row) {
    return std::isfinite(row[static_cast<size_t>(column - 1)]);
  });
}

std::string dataBlock(const std::string& name, const Rows& rows) {
  std::string text = name + " << EOD\n";
  for (const std::vector<double>& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) text += (i ? " " : "") + gnuplotNumber(row[i]);
    text += "\n";
  }
  return text + "EOD\n";
}

}  // namespace

namespace {

// One run as the panels draw it.
struct RunView {
  std::string block;  // its data block
  Rows rows;
  std::string name;  // in the legend, when runs are compared
  size_t index = 0;
  bool compared = false;

  std::string colour(size_t ownColour) const {
    return kColours[(compared ? index : ownColour) % kColours.size()];
  }
  std::string title(const std::string& what) const { return compared ? name + " " + what : what; }
  size_t drawnEach() const { return compared ? kComparedRanksDrawnEach : kRanksDrawnEach; }
};

void add(Panel& panel, const RunView& run, Series series) {
  if (hasValues(run.rows, series.column)) panel.series.push_back(std::move(series));
}

// Compared runs say in the legend what one of them lacks.
void noteWhenMissing(Panel& panel, const RunView& run, size_t seriesBefore,
                     const std::string& missing) {
  if (run.compared && panel.series.size() == seriesBefore) {
    panel.notes.push_back(run.name + ": " + missing);
  }
}

Panel lossPanel(const std::vector<RunView>& runs) {
  Panel p("loss per epoch", "loss", "[*:*]", "% h", "top right", "no loss recorded");
  for (const RunView& r : runs) {
    add(p, r, {r.block, kTrainLoss, r.title("train"), r.colour(0), 1, 7});
    add(p, r, {r.block, kTestLoss, r.title("test"), r.colour(1), 2, 6});
  }
  return p;
}

Panel accuracyPanel(const std::vector<RunView>& runs) {
  Panel p("test accuracy", "% of the test set", "[*:*]", "% h", "bottom right",
          "no test set was evaluated");
  for (const RunView& r : runs) {
    const size_t before = p.series.size();
    add(p, r, {r.block, kAccuracy, r.compared ? r.name : "test set", r.colour(2), 1, 7});
    noteWhenMissing(p, r, before, "no test set");
  }
  return p;
}

Panel samplesPanel(const std::vector<RunView>& runs) {
  Panel p("training throughput", "samples/s, all ranks", "[0:*]", "%.0f", "bottom right", "");
  for (const RunView& r : runs) {
    add(p, r, {r.block, kSamples, r.compared ? r.name : "samples/s", r.colour(0), 1, 7});
  }
  return p;
}

Panel waitPanel(const std::vector<RunView>& runs, const std::vector<MetricsRun>& files) {
  Panel p("waiting for averaged gradients", "% of the epoch", "[0:*]", "% h", "top right",
          "not recorded in this metrics file");
  for (const RunView& r : runs) {
    const size_t before = p.series.size();
    const std::vector<std::string> titles =
        waitTitles(ranksWithWaits(files[r.index]), r.drawnEach());
    for (size_t k = 0; k < titles.size(); ++k) {
      const int dash = r.compared ? static_cast<int>(k % 5) + 1 : 1;
      add(p, r,
          {r.block, kFirstWait + static_cast<int>(k), r.title(titles[k]), r.colour(k), dash,
           kPoints[k % kPoints.size()]});
    }
    noteWhenMissing(p, r, before, "not recorded");
  }
  return p;
}

std::string seriesLine(const Series& s) {
  return fmt::format("{} using 1:{} with linespoints title {} lc rgb '{}' dt {} pt {} ps 0.9 lw 2",
                     s.block, s.column, gnuplotString(s.title), s.colour, s.dash, s.point);
}

// The rows the legend under a panel takes: as many of its entries side by
// side as fit in half the figure's width.
size_t legendRows(const Panel& p, ImageSize size) {
  size_t entries = p.notes.size(), longest = 0;
  for (const Series& s : p.series) longest = std::max(longest, s.title.size());
  for (const std::string& n : p.notes) longest = std::max(longest, n.size());
  entries += p.series.size();
  const double entryPixels = static_cast<double>(longest) * kLegendCharPixels + 70;
  const auto columns = static_cast<size_t>(std::max(1.0, (size.width / 2.0 - 80) / entryPixels));
  return std::max<size_t>(1, (entries + columns - 1) / columns);
}

std::string panelScript(const Panel& p, size_t legendRows) {
  std::string text =
      fmt::format("set title {}\nset ylabel {}\nset format y {}\n", gnuplotString(p.title),
                  gnuplotString(p.ylabel), gnuplotString(p.yformat));
  if (p.series.empty()) {
    return text + fmt::format(
                      "unset key\nset yrange [0:1]\nunset ytics\n"
                      "set label 1 {} at graph 0.5,0.5 center\nplot NaN notitle\n"
                      "unset label 1\nset ytics nomirror\n",
                      gnuplotString(p.nothing));
  }
  text += fmt::format("set key below horizontal maxrows {} samplen 3\n", legendRows);
  // Room above the highest point, and below the lowest unless the axis starts at 0.
  const bool fromZero = p.yrange.rfind("[0:", 0) == 0;
  text += fmt::format("set offsets 0, 0, graph 0.06, {}\n", fromZero ? "0" : "graph 0.06");
  text += "set yrange " + p.yrange + "\nplot ";
  for (size_t i = 0; i < p.series.size(); ++i) {
    text += (i ? ", \\\n     " : "") + seriesLine(p.series[i]);
  }
  for (const std::string& note : p.notes) {
    text += ", \\\n     keyentry with lines lc rgb 'white' title " + gnuplotString(note);
  }
  return text + "\n";
}

// The x axis: every epoch of every run, whole numbers only.
std::string epochAxis(const std::vector<MetricsRun>& runs) {
  int64_t first = runs.front().epochs.front().epoch, last = first;
  for (const MetricsRun& run : runs) {
    for (const train::EpochMetrics& e : run.epochs) {
      first = std::min(first, e.epoch);
      last = std::max(last, e.epoch);
    }
  }
  const int64_t step = std::max<int64_t>(1, (last - first + 12) / 12);
  return fmt::format(
      "set xlabel 'epoch'\nset xrange [{}:{}]\nset xtics {} nomirror\nset ytics nomirror\n"
      "set format x '%.0f'\nset border 3\nset grid\n",
      static_cast<double>(first) - 0.5, static_cast<double>(last) + 0.5, step);
}

std::string figureTitle(const std::vector<MetricsRun>& runs,
                        const std::vector<std::string>& names) {
  if (runs.size() == 1) return gnuplotString(runs[0].path + ": " + describeRun(runs[0].run));
  std::string title;
  for (size_t i = 0; i < runs.size(); ++i) {
    title +=
        (i ? ".\"\\n\"." : "") +
        gnuplotString(fmt::format("{}: {} ({})", names[i], describeRun(runs[i].run), runs[i].path));
  }
  return title;
}

}  // namespace

std::vector<std::string> legendNames(const std::vector<MetricsRun>& runs) {
  using Namer = std::string (*)(const MetricsRun&);
  const Namer namers[] = {
      [](const MetricsRun& r) { return r.run.runtime; },
      [](const MetricsRun& r) { return std::filesystem::path(r.path).filename().string(); },
      [](const MetricsRun& r) { return r.path; },
  };
  std::vector<std::string> names;
  for (Namer namer : namers) {
    names.clear();
    for (const MetricsRun& run : runs) names.push_back(namer(run));
    const std::set<std::string> distinct(names.begin(), names.end());
    if (distinct.size() == names.size() && !distinct.contains("")) return names;
  }
  return names;
}

std::string metricsFigureScript(const std::vector<MetricsRun>& runs, ImageFormat format,
                                ImageSize size) {
  const std::vector<std::string> names = legendNames(runs);
  std::vector<RunView> views;
  std::string script = terminalLine(format, size);
  for (size_t i = 0; i < runs.size(); ++i) {
    const bool compared = runs.size() > 1;
    const size_t drawnEach = compared ? kComparedRanksDrawnEach : kRanksDrawnEach;
    views.push_back({fmt::format("$run{}", i), rowsOf(runs[i], drawnEach), names[i], i, compared});
    script += dataBlock(views.back().block, views.back().rows);
  }
  script += epochAxis(runs);
  const std::vector<Panel> panels = {lossPanel(views), accuracyPanel(views), samplesPanel(views),
                                     waitPanel(views, runs)};
  // Every panel keeps room for the longest legend, so that the four align.
  size_t rows = 1;
  for (const Panel& p : panels) rows = std::max(rows, legendRows(p, size));
  script += fmt::format("set bmargin {}\n", rows + 4);
  script += "set multiplot layout 2,2 title " + figureTitle(runs, names) + " font ',12'\n";
  for (const Panel& p : panels) script += panelScript(p, rows);
  return script + "unset multiplot\n";
}

}  // namespace distrun::plot
