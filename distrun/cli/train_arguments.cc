#include "distrun/cli/train_arguments.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "distrun/cli/commands.h"
#include "distrun/cli/flag_check.h"
#include "distrun/cli/trace_flags.h"
#include "distrun/common/command_line.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/train_app/train_flags.h"

namespace distrun::cli {

namespace {

constexpr const char* kWhereFlagsAreListed =
    "neither a launcher flag ('distrun train --help') nor a training flag "
    "('distrun train mnist --help')";

bool isFlag(const std::string& arg) { return looksLikeFlag(arg) && arg != "--"; }

bool isHelp(const std::string& name) { return name == "-h" || name == "--help"; }

// A flag argument: the name it gives and whether its value is attached.
struct FlagArgument {
  std::string name;
  bool valueAttached = false;
};

// "--x=1" gives --x; "-r1" gives -r when a set knows -r; else the argument.
FlagArgument flagArgument(const std::string& arg, const FlagSet& a, const FlagSet& b) {
  const size_t equals = arg.find('=');
  if (arg.rfind("--", 0) == 0 && equals != std::string::npos) {
    return {arg.substr(0, equals), true};
  }
  const std::string shortName = arg.substr(0, 2);
  if (arg[1] != '-' && arg.size() > 2 && (a.count(shortName) || b.count(shortName))) {
    return {shortName, true};
  }
  return {arg, false};
}

std::string unknownTrainFlagMessage(const std::string& name, const FlagSet& launcher,
                                    const FlagSet& training) {
  const std::optional<std::string> l = closestName(name, longNames(launcher));
  const std::optional<std::string> t = closestName(name, longNames(training));
  if (l && (!t || editDistance(name, *l) <= editDistance(name, *t))) {
    return fmt::format("train: unknown flag {}: did you mean {} (a launcher flag)?", name, *l);
  }
  if (t) {
    return fmt::format("train: unknown flag {}: did you mean {} (a training flag)?", name, *t);
  }
  return fmt::format("train: unknown flag {}: {}", name, kWhereFlagsAreListed);
}

// Sorts one argument at a time into a TrainArguments.
class ArgumentSorter {
 public:
  ArgumentSorter(const std::vector<std::string>& args, const FlagSet& launcher,
                 const FlagSet& training)
      : args_(args), launcher_(launcher), training_(training) {}

  TrainArguments sort() {
    for (next_ = 0; next_ < args_.size();) {
      const std::string& arg = args_[next_++];
      if (arg == "--") {
        takeRest();
      } else if (isFlag(arg)) {
        takeFlag(arg);
      } else {
        takeWorkload(arg);
      }
    }
    if (sorted_.workload.empty() && !sorted_.training.empty()) {
      throw UsageError(
          fmt::format("train: expected a workload (mnist or linear) for the "
                      "training flag {}",
                      sorted_.training.front()));
    }
    return sorted_;
  }

 private:
  void takeRest() {
    if (sorted_.workload.empty() && next_ < args_.size()) {
      sorted_.workload = args_[next_++];
    }
    sorted_.training.insert(sorted_.training.end(),
                            args_.begin() + static_cast<std::ptrdiff_t>(next_), args_.end());
    next_ = args_.size();
  }

  void takeWorkload(const std::string& arg) {
    if (!sorted_.workload.empty()) {
      throw UsageError(
          fmt::format("train: unexpected argument '{}' after the workload {}: distrun "
                      "train [LAUNCHER FLAGS] WORKLOAD [TRAINING FLAGS] takes one workload",
                      arg, sorted_.workload));
    }
    sorted_.workload = arg;
  }

  void takeFlag(const std::string& arg) {
    const FlagArgument flag = flagArgument(arg, launcher_, training_);
    const bool toLauncher = goesToLauncher(flag.name);
    const FlagSet& set = toLauncher ? launcher_ : training_;
    std::vector<std::string>& part = toLauncher ? sorted_.launcher : sorted_.training;
    part.push_back(arg);
    if (!set.at(flag.name) || flag.valueAttached) return;
    if (next_ == args_.size() || args_[next_] == "--" || isKnownFlag(args_[next_])) {
      throw UsageError(fmt::format("train: {} flag {} needs a value",
                                   toLauncher ? "launcher" : "training", flag.name));
    }
    part.push_back(args_[next_++]);
  }

  bool goesToLauncher(const std::string& name) const {
    const bool launcher = launcher_.count(name) != 0;
    const bool training = training_.count(name) != 0;
    if (launcher && training) {
      if (isHelp(name)) return sorted_.workload.empty();
      throw UsageError(
          fmt::format("train: {} is both a launcher flag and a training flag: "
                      "its name cannot say where it goes",
                      name));
    }
    if (!launcher && !training) {
      throw UsageError(unknownTrainFlagMessage(name, launcher_, training_));
    }
    return launcher;
  }

  bool isKnownFlag(const std::string& arg) const {
    if (!isFlag(arg)) return false;
    const std::string name = flagArgument(arg, launcher_, training_).name;
    return launcher_.count(name) != 0 || training_.count(name) != 0;
  }

  const std::vector<std::string>& args_;
  const FlagSet& launcher_;
  const FlagSet& training_;
  size_t next_ = 0;
  TrainArguments sorted_;
};

}  // namespace

FlagSet flagsOf(const CLI::App& app) {
  FlagSet flags;
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) continue;
    const bool takesValue = option->get_items_expected_max() > 0;
    for (const std::string& name : option->get_lnames()) {
      flags["--" + name] = takesValue;
    }
    for (const std::string& name : option->get_snames()) {
      flags["-" + name] = takesValue;
    }
  }
  return flags;
}

FlagSet launcherFlagSet() {
  CLI::App app;
  launch::RunOptions options;
  std::string ignored;
  addLauncherFlags(&app, options, ignored);
  TraceFlags trace;
  addTraceFlags(&app, trace);
  return flagsOf(app);
}

FlagSet trainingFlagSet() {
  CLI::App app;
  train::TrainFlags flags;
  train::addTrainFlags(app, flags);
  return flagsOf(app);
}

TrainArguments sortTrainArguments(const std::vector<std::string>& args, const FlagSet& launcher,
                                  const FlagSet& training) {
  return ArgumentSorter(args, launcher, training).sort();
}

}  // namespace distrun::cli
