#pragma once

// What distrun submit knows of sbatch's own command line: its long options
// that submit has no flag of its own for, so that one given to submit is
// refused with the --sbatch-arg form that passes it through.
#include <optional>
#include <string>
#include <vector>

namespace distrun::submit {

// "submit: --mem is sbatch's flag, not distrun submit's: pass it through as
// --sbatch-arg=--mem=480G" when `args` (what submit's parser left, in
// order) starts with one of sbatch's long options (sbatch 22.05 to 24.11),
// its value the next argument, or "VALUE" when none follows (a flag that
// takes none, such as --hold, stands alone); nullopt for any other.
std::optional<std::string> sbatchFlagMessage(const std::vector<std::string>& args);

}  // namespace distrun::submit
