#pragma once

#include <string>
#include <utility>
#include <vector>

#include "distrun/common/environment.h"

namespace distrun::cluster {

// What an earlier `eval "$(distrun env)"` left in a shell. `distrun env`
// exports, beside the variables it derived, a marker that lists them with a
// fingerprint of each value. A later command treats a listed variable whose
// value still matches as left over, as if the shell had never set it; one
// the user changed since (or set again for this command) is the user's.
// docs/environment.md, "After eval "$(distrun env)"".

// The marker's name.
inline constexpr const char* kEnvMarker = "DISTRUN_ENV_SET";

// The marker for `exported` (name, value) pairs: "NAME:XXXXXXXX,..." where
// XXXXXXXX is the low 32 bits of FNV-1a 64 of "NAME=VALUE" in hex.
std::string envMarker(const std::vector<std::pair<std::string, std::string>>& exported);

// The variables `env`'s marker lists whose values in `env` still match, in
// the marker's order. None without a marker; entries of a garbled marker
// that do not parse are skipped (the marker is distrun's, not an input).
std::vector<std::string> leftoverVariables(const Environment& env);

// `env` without its leftovers and without the marker: the environment a
// command reads when it runs in a shell that evaluated `distrun env`.
MapEnvironment withoutLeftovers(const Environment& env);

// The environment a command reads: the shell's, less what an earlier eval
// left (withoutLeftovers), and the names it left. A copy; a plain value.
struct UserEnvironment {
  explicit UserEnvironment(const Environment& shell)
      : leftovers(leftoverVariables(shell)), env(withoutLeftovers(shell)) {}
  std::vector<std::string> leftovers;
  MapEnvironment env;
};

// One line for the user: which variables were ignored and why.
std::string leftoversNote(const std::vector<std::string>& names);

// The variables distrun reads to place a task (torchrun's RANK ...
// MASTER_PORT, Slurm's, Open MPI's, MPICH's, PBS's) that are set in `env`,
// then the leftovers and the marker: what `distrun env --unset` clears.
std::vector<std::string> placementVariablesSet(const Environment& env);

// Appended to every error about the variables that place a task: how to
// clear them when they are stale.
inline constexpr const char* kClearStaleHint =
    "; if left from an earlier shell or job, clear them: "
    "eval \"$(distrun env --unset)\"";

}  // namespace distrun::cluster
