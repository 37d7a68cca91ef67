#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/cli/build_info.h"
#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cli/rank_setup.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::cli {

namespace {

using cluster::RankVariable;
using Source = RankVariable::Source;

struct EnvOptions {
  std::string format = "sh";
  std::optional<std::string> site;
  bool unset = false;
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

// The marker of what distrun set here, not what the user had set (kept).
std::string marker(const cluster::ThisTask& s) {
  std::vector<std::pair<std::string, std::string>> set;
  for (const RankVariable& v : s.environment.variables) {
    if (v.source != Source::kKept) set.emplace_back(v.name, v.value);
  }
  return cluster::envMarker(set);
}

void printSh(const cluster::ThisTask& s, std::ostream& out) {
  out << "# distrun env: " << summary(s) << "\n";
  for (const RankVariable& v : s.environment.variables) {
    out << "export " << v.name << "=" << shellQuote(v.value) << shComment(v) << "\n";
  }
  out << "export " << cluster::kEnvMarker << "=" << shellQuote(marker(s))
      << "  # what distrun set: later commands ignore these values while they are unchanged\n";
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
  doc["build"] = toJson(thisBuild());
  out << doc.dump() << "\n";
}

// `--unset`: one line that clears what places a task, for a shell whose
// variables are stale.
void printUnset(const Environment& env, std::ostream& out) {
  const std::vector<std::string> names = cluster::placementVariablesSet(env);
  if (names.empty()) {
    out << "# distrun env --unset: none of the variables that place a task is set\n";
  } else {
    out << "unset " << join(names, " ") << "\n";
  }
}

void runEnv(const EnvOptions& o, CliContext& ctx) {
  if (o.unset) {
    printUnset(ctx.env, ctx.out);
    return;
  }
  const cluster::UserEnvironment user(ctx.env);
  cluster::ThisTask setup = prepareRank(ctx, user.env, o.site);
  if (!user.leftovers.empty()) {
    setup.environment.notes.push_back(cluster::leftoversNote(user.leftovers));
  }
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
  CLI::Option* format = cmd->add_option("--format", options->format, "sh (default) or json")
                            ->check(CLI::IsMember({"sh", "json"}));
  CLI::Option* site =
      cmd->add_option("--site", options->site, "site profile NAME, or 'none' (default: detected)");
  cmd->add_flag("--unset", options->unset,
                "print `unset` for every variable that places a task (RANK, SLURM_*, OMPI_*, "
                "...) set here: `eval \"$(distrun env --unset)\"` clears stale ones")
      ->excludes(site)
      ->excludes(format);
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
