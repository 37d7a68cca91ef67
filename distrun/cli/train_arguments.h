#pragma once

// How `distrun train` sorts its command line: the launcher's flags go to
// the node agent wherever they stand, WORKLOAD and distrun-train's flags
// to the workers' command line. The two sets of flags share no name but
// help (a test keeps it so), so a flag's name says where it goes.
#include <map>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace distrun::cli {

// A command's flags: every spelling ("--nproc-per-node", "--nproc_per_node",
// "-r") and whether it takes a value.
using FlagSet = std::map<std::string, bool>;

// The flags `app` declares (its positionals left out), help included.
FlagSet flagsOf(const CLI::App& app);
// `distrun train`'s launcher flags: `distrun run`'s (addLauncherFlags) and
// --trace* (addTraceFlags); and distrun-train's (train::addTrainFlags).
FlagSet launcherFlagSet();
FlagSet trainingFlagSet();

// `distrun train`'s arguments, sorted; each part keeps the user's order.
struct TrainArguments {
  std::vector<std::string> launcher;  // launcher flags and their values
  std::string workload;               // "" when none was given
  std::vector<std::string> training;  // distrun-train's flags and values
};

// Sorts `args` (what follows `distrun train`). A flag ("--x", "--x=1",
// "-r", "-r1") goes to the set that knows its name, its value (the next
// argument, unless attached) with it; help, which both know, goes by its
// place: before WORKLOAD it is `distrun train`'s, after it distrun-train's.
// The first other argument is WORKLOAD; after `--` the rest is WORKLOAD
// and distrun-train's arguments as given. Nothing is launched before this
// returns; it throws UsageError (exit 64), naming the argument, for a flag
// neither set knows (with the closest known name, if one is close), a flag
// both know, a flag without its value, a second WORKLOAD, or training flags
// without one.
TrainArguments sortTrainArguments(const std::vector<std::string>& args, const FlagSet& launcher,
                                  const FlagSet& training);

}  // namespace distrun::cli
