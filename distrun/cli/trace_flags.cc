#include "distrun/cli/trace_flags.h"

#include <filesystem>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "distrun/common/error.h"
#include "distrun/trace/config.h"

namespace distrun::cli {

void addTraceFlags(CLI::App* cmd, TraceFlags& flags) {
  cmd->add_option("--trace", flags.folder,
                  "record a trace of every rank and agent into DIR (rank<R>.jsonl, "
                  "agent<N>.jsonl; merge with 'distrun trace merge DIR')");
  cmd->add_option("--trace-steps", flags.steps,
                  "with --trace: record global training steps A to B only (A:B, from 1)");
  cmd->add_option(
      "--trace-max-mb", flags.maxMb,
      fmt::format("with --trace: cap each trace file at N MB (default {})", trace::kDefaultMaxMb));
}

std::map<std::string, std::string> traceVariables(const TraceFlags& flags) {
  std::map<std::string, std::string> variables;
  if (flags.steps) trace::parseStepWindow(*flags.steps, "--trace-steps " + *flags.steps);
  if (flags.maxMb) trace::parseMaxMb(*flags.maxMb, "--trace-max-mb " + *flags.maxMb);
  if (!flags.folder) {
    if (flags.steps || flags.maxMb) {
      throw UsageError(fmt::format("{} needs --trace DIR, the folder of the trace",
                                   flags.steps ? "--trace-steps" : "--trace-max-mb"));
    }
    return variables;
  }
  if (flags.folder->empty()) throw UsageError("--trace: expected a folder, got ''");
  const std::string folder = std::filesystem::absolute(*flags.folder).lexically_normal();
  trace::prepareFolder(folder, "--trace");
  variables["DISTRUN_TRACE"] = folder;
  if (flags.steps) variables["DISTRUN_TRACE_STEPS"] = *flags.steps;
  if (flags.maxMb) variables["DISTRUN_TRACE_MAX_MB"] = *flags.maxMb;
  return variables;
}

}  // namespace distrun::cli
