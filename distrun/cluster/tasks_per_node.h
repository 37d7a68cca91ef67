#pragma once

#include <string_view>
#include <vector>

namespace distrun::cluster {

// Parses Slurm's compressed task counts, as in SLURM_TASKS_PER_NODE and
// SLURM_STEP_TASKS_PER_NODE: "2(x3),1" is {2, 2, 2, 1}. `variable` names
// the input in the ConfigError thrown for a malformed value.
std::vector<int> parseTasksPerNode(std::string_view value, std::string_view variable);

}  // namespace distrun::cluster
