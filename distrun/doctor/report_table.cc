// The table: one screen for any number of nodes, as long as the distinct
// results are few. Nodes fold into hostlists, long lists are cut with a
// count, and the lines of failures, warnings and skips share a budget of
// lines so that the whole stays under kScreenLines.
#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "distrun/cluster/hostlist.h"
#include "distrun/common/error.h"
#include "distrun/doctor/report_format.h"

namespace distrun::doctor {
namespace {

constexpr size_t kWidth = 100;          // columns of every line
constexpr size_t kListChars = 40;       // a folded node list longer than this is cut
constexpr size_t kScreenLines = 48;     // the whole table, at most
constexpr size_t kSkipReserve = 5;      // lines the problems leave for the skips
constexpr size_t kDetailsPerCheck = 3;  // distinct details shown per check and state

// The nodes that share one result: same check, state, detail and fix.
struct Group {
  std::string check;
  CheckState state = CheckState::kOk;
  std::string detail;
  std::string fix;
  std::vector<std::string> nodes;
};

// The lines of one entry of the problems or the skips, and the distinct
// results it stands for (so that a cut can say how many it leaves out).
struct Block {
  std::vector<std::string> lines;
  size_t results = 0;
};

std::string plural(size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::vector<std::string> nodesIn(const DoctorReport& report, const std::string& check,
                                 CheckState state) {
  std::vector<std::string> nodes;
  for (const NodeReport& node : report.nodes) {
    const CheckResult* r = node.find(check);
    if (r != nullptr && r->state == state) nodes.push_back(node.node);
  }
  return nodes;
}

// `list` (a folded hostlist of `count` nodes) cut at a comma so that at
// most `limit` characters of it remain, plus the count; only the count
// when no comma is early enough.
std::string cutList(const std::string& list, size_t count, size_t limit) {
  if (list.size() <= limit) return list;
  size_t cut = std::string::npos;
  int depth = 0;
  int depthAtCut = 0;
  for (size_t i = 0; i < list.size() && i <= limit; ++i) {
    depth += list[i] == '[' ? 1 : list[i] == ']' ? -1 : 0;
    if (list[i] == ',') cut = i, depthAtCut = depth;
  }
  if (cut == std::string::npos) return plural(count, "node");
  return list.substr(0, cut) + (depthAtCut > 0 ? ",...]" : ",...") + " (" + plural(count, "node") +
         ")";
}

std::string foldNodes(const std::vector<std::string>& nodes, size_t limit) {
  return cutList(cluster::compressHostlist(nodes), nodes.size(), limit);
}

std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

// How many characters of a row's folded node lists to keep: of ok and
// skip (quiet), and of warn and fail (loud, cut last).
struct ListLimits {
  size_t quiet;
  size_t loud;
};

std::string checkRow(const DoctorReport& report, const std::string& check, size_t nameWidth,
                     ListLimits limits) {
  std::string row = padded(check, nameWidth);
  bool any = false;
  for (CheckState s : {CheckState::kOk, CheckState::kWarn, CheckState::kFail, CheckState::kSkip}) {
    std::vector<std::string> nodes = nodesIn(report, check, s);
    if (nodes.empty()) continue;
    bool loud = s == CheckState::kWarn || s == CheckState::kFail;
    row += (any ? "  " : "") + stateName(s) + " " +
           foldNodes(nodes, loud ? limits.loud : limits.quiet);
    any = true;
  }
  return any ? row : row + "no results";
}

// The row of `check`, its node lists cut shorter until it fits kWidth: the
// lists of ok and skip nodes first, down to their count.
std::string fittedRow(const DoctorReport& report, const std::string& check, size_t nameWidth) {
  static const ListLimits kTries[] = {{kListChars, kListChars},
                                      {24, kListChars},
                                      {0, kListChars},
                                      {0, 32},
                                      {0, 24},
                                      {0, 16},
                                      {0, 0}};
  std::string row;
  for (ListLimits limits : kTries) {
    row = checkRow(report, check, nameWidth, limits);
    if (row.size() <= kWidth) break;
  }
  return row;
}

size_t checksWhoseWorstIs(const DoctorReport& report, const std::vector<std::string>& checks,
                          CheckState state) {
  return static_cast<size_t>(std::count_if(checks.begin(), checks.end(), [&](const auto& check) {
    return checkState(report, check) == state;
  }));
}

std::string headline(const DoctorReport& report, const std::vector<std::string>& checks) {
  std::vector<std::string> names;
  for (const NodeReport& node : report.nodes) names.push_back(node.node);
  std::string line = "distrun doctor: " + plural(names.size(), "node");
  if (!names.empty()) line += " (" + foldNodes(names, kListChars) + ")";
  line += ", " + plural(checks.size(), "check") + ": ";
  size_t failed = checksWhoseWorstIs(report, checks, CheckState::kFail);
  size_t warned = checksWhoseWorstIs(report, checks, CheckState::kWarn);
  if (failed == 0 && warned == 0) return line + "all passed";
  return line + std::to_string(failed) + " failed, " + plural(warned, "warning");
}

// The results of `check` in `state`, grouped; the largest group first,
// then in the order of the nodes.
std::vector<Group> groupsOf(const DoctorReport& report, const std::string& check,
                            CheckState state) {
  std::vector<Group> groups;
  for (const NodeReport& node : report.nodes) {
    const CheckResult* r = node.find(check);
    if (r == nullptr || r->state != state) continue;
    auto same = [&](const Group& g) { return g.detail == r->detail && g.fix == r->fix; };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      it = groups.insert(groups.end(), Group{check, state, r->detail, r->fix, {}});
    }
    it->nodes.push_back(node.node);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.nodes.size() > b.nodes.size(); });
  return groups;
}

// `line` broken at blanks into lines of at most kWidth columns, the
// continuation lines indented by `indent`.
std::vector<std::string> wrapped(std::string line, size_t indent) {
  std::vector<std::string> lines;
  while (line.size() > kWidth) {
    size_t cut = line.rfind(' ', kWidth);
    if (cut == std::string::npos || cut <= indent) cut = kWidth;
    std::string head = line.substr(0, cut);
    head.erase(head.find_last_not_of(' ') + 1);
    lines.push_back(head);
    size_t next = line.find_first_not_of(' ', cut);
    line = std::string(indent, ' ') + (next == std::string::npos ? "" : line.substr(next));
  }
  lines.push_back(line);
  return lines;
}

Block groupBlock(const Group& g) {
  std::string line = stateName(g.state) + " " + g.check + " on " + foldNodes(g.nodes, kListChars) +
                     ": " + oneLine(g.detail);
  Block block{wrapped(line, 4), 1};
  if (!g.fix.empty()) {
    for (std::string& fix : wrapped("  fix: " + oneLine(g.fix), 7)) block.lines.push_back(fix);
  }
  return block;
}

Block moreBlock(CheckState state, const std::string& check, const std::vector<Group>& hidden) {
  size_t nodes = 0;
  for (const Group& g : hidden) nodes += g.nodes.size();
  return Block{{stateName(state) + " " + check + ": ... and " + std::to_string(nodes) + " more " +
                (nodes == 1 ? "node" : "nodes") + " with other details (--format json lists them)"},
               hidden.size()};
}

// Up to kDetailsPerCheck groups of `check` in `state`, then how many more.
void addBlocks(std::vector<Block>& blocks, const DoctorReport& report, const std::string& check,
               CheckState state) {
  std::vector<Group> groups = groupsOf(report, check, state);
  for (size_t i = 0; i < groups.size() && i < kDetailsPerCheck; ++i) {
    blocks.push_back(groupBlock(groups[i]));
  }
  if (groups.size() > kDetailsPerCheck) {
    std::vector<Group> hidden(groups.begin() + kDetailsPerCheck, groups.end());
    blocks.push_back(moreBlock(state, check, hidden));
  }
}

// The blocks in order, as many as fit `budget` lines; the last line then
// says how many distinct results (`what`) did not fit.
std::vector<std::string> fitted(const std::vector<Block>& blocks, size_t budget,
                                const std::string& what) {
  std::vector<std::string> lines;
  for (size_t i = 0; i < blocks.size(); ++i) {
    bool last = i + 1 == blocks.size();
    if (lines.size() + blocks[i].lines.size() + (last ? 0 : 1) > budget) {
      size_t left = 0;
      for (size_t j = i; j < blocks.size(); ++j) left += blocks[j].results;
      lines.push_back("... and " + std::to_string(left) + " more " + what +
                      " (--format json lists them)");
      break;
    }
    lines.insert(lines.end(), blocks[i].lines.begin(), blocks[i].lines.end());
  }
  return lines;
}

std::vector<Block> blocksIn(const DoctorReport& report, const std::vector<std::string>& checks,
                            const std::vector<CheckState>& states) {
  std::vector<Block> blocks;
  for (CheckState state : states) {
    for (const std::string& check : checks) addBlocks(blocks, report, check, state);
  }
  return blocks;
}

// The lines left for a section (and its blank line) after `used` lines,
// keeping `reserve` for what follows; at least a failure and a cut line.
size_t linesLeft(size_t used, size_t reserve) {
  constexpr size_t kAtLeast = 3;
  return used + 1 + reserve + kAtLeast <= kScreenLines ? kScreenLines - used - 1 - reserve
                                                       : kAtLeast;
}

// A section after a blank line; the lines it took.
size_t writeSection(std::ostream& out, const std::vector<std::string>& lines) {
  if (lines.empty()) return 0;
  out << "\n";
  for (const std::string& line : lines) out << line << "\n";
  return lines.size() + 1;
}

// The figures a user runs the doctor to see, when every node that passed
// shares them: the allreduce's bus bandwidth among the nodes.
std::vector<std::string> measuredLines(const DoctorReport& report) {
  std::vector<std::string> lines;
  for (const char* check : {"allreduce"}) {
    std::vector<Group> groups = groupsOf(report, check, CheckState::kOk);
    if (groups.size() != 1) continue;
    for (const std::string& line : groupBlock(groups.front()).lines) lines.push_back(line);
  }
  return lines;
}

size_t writeRows(std::ostream& out, const DoctorReport& report,
                 const std::vector<std::string>& checks) {
  size_t nameWidth = 0;
  for (const std::string& check : checks) nameWidth = std::max(nameWidth, check.size() + 2);
  out << headline(report, checks) << "\n";
  for (const std::string& check : checks) out << fittedRow(report, check, nameWidth) << "\n";
  return 1 + checks.size();
}

}  // namespace

std::vector<std::string> reportedChecks(const DoctorReport& report) {
  std::vector<std::string> order = report.checks;
  for (const NodeReport& node : report.nodes) {
    for (const CheckResult& r : node.results) {
      if (std::find(order.begin(), order.end(), r.check) == order.end()) order.push_back(r.check);
    }
  }
  return order;
}

CheckState checkState(const DoctorReport& report, const std::string& check) {
  CheckState worst = CheckState::kSkip;
  for (const NodeReport& node : report.nodes) {
    const CheckResult* r = node.find(check);
    if (r != nullptr) worst = std::max(worst, r->state);
  }
  return worst;
}

std::string oneLine(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

void writeTable(std::ostream& out, const DoctorReport& report) {
  const std::vector<std::string> checks = reportedChecks(report);
  size_t used = writeRows(out, report, checks);
  used += writeSection(out, measuredLines(report));
  used +=
      writeSection(out, fitted(blocksIn(report, checks, {CheckState::kFail, CheckState::kWarn}),
                               linesLeft(used, kSkipReserve), "distinct failures and warnings"));
  writeSection(out, fitted(blocksIn(report, checks, {CheckState::kSkip}), linesLeft(used, 0),
                           "distinct skip reasons"));
}

void writeReport(std::ostream& out, const DoctorReport& report, const std::string& format) {
  if (format == "table") return writeTable(out, report);
  if (format == "json") return writeJson(out, report);
  if (format == "nhc") return writeNhc(out, report);
  throw UsageError("--format " + format + ": expected table, json or nhc");
}

}  // namespace distrun::doctor
