#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cli/rank_setup.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cli {

namespace {

using cluster::RankVariable;
using Source = RankVariable::Source;

struct EnvOptions {
  std::string format = "sh";
  std::optional<std::string> site;
};

std::string summary(const cluster::ThisTask& s) {
  const cluster::JobLayout& l = s.layout;
  std::string text = fmt::format("{}, rank {} of {} (node {} of {}, local rank {} of {})",
                                 cluster::schedulerName(l.scheduler), l.rank, l.worldSize,
                                 l.nodeRank, l.numNodes, l.localRank, l.localWorldSize);
  if (!s.environment.siteName.empty()) {
    text += ", site profile " + s.environment.siteName;
  }
  return text;
}

std::string shComment(const RankVariable& v) {
  switch (v.source) {
    case Source::kKept:
      return "  # kept: already set in the environment";
    case Source::kReplaced:
      return fmt::format("  # replaced {}={} from the environment", v.name, v.previous);
    case Source::kSite:
      return "  # site profile";
    case Source::kDerived:
      break;
  }
  return "";
}

void printSh(const cluster::ThisTask& s, std::ostream& out) {
  out << "# distrun env: " << summary(s) << "\n";
  for (const RankVariable& v : s.environment.variables) {
    out << "export " << v.name << "=" << shellQuote(v.value) << shComment(v) << "\n";
  }
  for (const std::string& note : s.environment.notes) {
    out << "# note: " << note << "\n";
  }
}

void printJson(const cluster::ThisTask& s, std::ostream& out) {
  nlohmann::ordered_json doc;
  doc["scheduler"] = cluster::schedulerName(s.layout.scheduler);
  doc["site"] = s.environment.siteName;
  doc["hosts"] = s.layout.hosts;
  doc["env"] = nlohmann::ordered_json::object();
  doc["kept"] = nlohmann::json::array();
  doc["replaced"] = nlohmann::ordered_json::object();
  for (const RankVariable& v : s.environment.variables) {
    doc["env"][v.name] = v.value;
    if (v.source == Source::kKept) doc["kept"].push_back(v.name);
    if (v.source == Source::kReplaced) doc["replaced"][v.name] = v.previous;
  }
  doc["node_dirs"] = s.environment.nodeDirs;
  doc["notes"] = s.environment.notes;
  out << doc.dump() << "\n";
}

void runEnv(const EnvOptions& o, CliContext& ctx) {
  cluster::ThisTask setup = prepareRank(ctx, o.site);
  if (o.format == "json") {
    printJson(setup, ctx.out);
  } else {
    printSh(setup, ctx.out);
  }
}

}  // namespace

Action addEnvCommand(CLI::App& app, CliContext& ctx) {
  auto options = std::make_shared<EnvOptions>();
  CLI::App* cmd =
      app.add_subcommand("env",
                         "Print the environment `distrun exec` would give this task (torchrun's "
                         "worker contract); `eval \"$(distrun env)\"` sets it in a shell");
  cmd->add_option("--format", options->format, "sh (default) or json")
      ->check(CLI::IsMember({"sh", "json"}));
  cmd->add_option("--site", options->site, "site profile NAME, or 'none' (default: detected)");
  cmd->allow_extras();  // refused below, an unknown flag with the nearest one
  return [options, cmd, &ctx] {
    const std::vector<std::string> extra = argumentsWithoutFlags(*cmd);
    if (!extra.empty()) {
      throw UsageError(
          fmt::format("env: unexpected argument '{}' (env takes flags only)", extra.front()));
    }
    runEnv(*options, ctx);
    return 0;
  };
}

}  // namespace distrun::cli
