// Fuzzes SLURM_TASKS_PER_NODE's parser (distrun/cluster/tasks_per_node.h):
// any text either fails with ConfigError or gives counts that are each >= 0.
#include <string_view>
#include <vector>

#include "distrun/cluster/tasks_per_node.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<int> counts;
  std::string_view value = distrun::fuzz::asText(data, size);
  if (distrun::fuzz::expectingErrors(
          [&] { counts = distrun::cluster::parseTasksPerNode(value, "SLURM_TASKS_PER_NODE"); })) {
    for (int count : counts) distrun::fuzz::check(count >= 0, "a negative task count");
  }
  return 0;
}
