// `distrun trace merge DIR [-o FILE]`: the files of a trace folder merged
// into one Chrome/Perfetto trace (docs/observability.md, "Merging: one
// trace for the job").
#include <memory>
#include <ostream>

#include <fmt/format.h>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/trace_merge/merge.h"

namespace distrun::cli {

namespace {

constexpr const char* kMergeUsage = "distrun trace merge DIR [-o FILE]";

struct MergeArguments {
  std::string output;
};

// DIR: the one argument the parser left that is not a flag.
std::string folderArgument(const CLI::App& merge) {
  const std::vector<std::string> rest = argumentsWithoutFlags(merge);
  if (rest.empty()) {
    throw UsageError(fmt::format(
        "trace merge: expected the trace folder DIR ({}; see 'distrun trace merge --help')",
        kMergeUsage));
  }
  if (rest.size() > 1) {
    throw UsageError(fmt::format("trace merge: one trace folder expected, got '{}' and '{}' ({})",
                                 rest[0], rest[1], kMergeUsage));
  }
  return rest.front();
}

int runMerge(const std::string& folder, const MergeArguments& a, CliContext& ctx) {
  const std::string output = a.output.empty() ? trace_merge::defaultOutputFor(folder) : a.output;
  const trace_merge::MergeReport report =
      trace_merge::mergeTraceFolder(folder, output, a.output.empty() ? "trace" : "-o");
  for (const std::string& note : report.notes) ctx.err << "distrun: trace merge: " << note << "\n";
  ctx.err << "distrun: trace merge: " << trace_merge::formatSummary(report) << "\n";
  return 0;
}

// `distrun trace` alone, or with a subcommand it does not have.
UsageError noSubcommand(const CLI::App& trace) {
  const std::vector<std::string> rest = trace.remaining();
  if (rest.empty()) {
    return UsageError("trace: expected a subcommand: merge (see 'distrun trace --help')");
  }
  if (looksLikeFlag(rest.front())) {
    return UsageError(unknownFlagMessage(trace, rest.front()));
  }
  if (auto known = closestName(rest.front(), {"merge"})) {
    return UsageError(
        fmt::format("trace: unknown subcommand '{}' (did you mean '{}'?)", rest.front(), *known));
  }
  return UsageError(fmt::format("trace: unknown subcommand '{}': expected merge", rest.front()));
}

}  // namespace

Action addTraceCommand(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<MergeArguments>();
  CLI::App* trace =
      app.add_subcommand("trace",
                         "Work with the traces of distrun train --trace and DISTRUN_TRACE "
                         "(docs/observability.md)");
  CLI::App* merge = trace->add_subcommand(
      "merge",
      "Merge the files of a trace folder (rank<R>.jsonl, agent<N>.jsonl, torch-rank<R>.json) into "
      "one Chrome/Perfetto trace: a process per rank, clocks aligned to rank 0, flows linking "
      "each collective across ranks");
  merge->add_option("-o,--output", args->output,
                    "the merged trace to write (default: DIR/trace.json; replaced when it exists)");
  merge->footer("DIR: the trace folder");
  merge->allow_extras();
  trace->allow_extras();
  return [args, trace, merge, &ctx] {
    if (!trace->got_subcommand(merge)) throw noSubcommand(*trace);
    return runMerge(folderArgument(*merge), *args, ctx);
  };
}

}  // namespace distrun::cli
