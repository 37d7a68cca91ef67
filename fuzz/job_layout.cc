// Fuzzes how a task reads the scheduler's variables: the fuzz bytes are an
// environment, one NAME=VALUE per line (Slurm, PBS, Open MPI, MPICH and
// torchrun variables, by the dictionary), optionally followed by a line
// "--nodefile--" and the content of the file PBS_NODEFILE names. thisTask
// (distrun/cluster/this_task.h: detectJobLayout, then buildRankEnvironment)
// either throws a distrun error or gives a layout whose ids lie within
// their counts.
#include <string>
#include <string_view>

#include "distrun/cluster/this_task.h"
#include "fuzz/fuzz_support.h"

namespace {

using distrun::cluster::JobLayout;

constexpr std::string_view kNodefileMark = "--nodefile--\n";

// The environment of the input's lines; a PBS_NODEFILE among them names a
// scratch file holding `nodefile`.
distrun::MapEnvironment environmentOf(std::string_view lines, std::string_view nodefile) {
  distrun::MapEnvironment env;
  while (!lines.empty()) {
    size_t end = lines.find('\n');
    std::string_view line = lines.substr(0, end);
    lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 1);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    env.set(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  if (env.has("PBS_NODEFILE")) {
    std::string path = distrun::fuzz::scratchPath("nodefile");
    distrun::fuzz::writeScratch(path, nodefile);
    env.set("PBS_NODEFILE", path);
  }
  return env;
}

void checkWithin(int id, int count, std::string_view what) {
  distrun::fuzz::check(count >= 1 && id >= 0 && id < count,
                       std::string(what) + " outside its count");
}

void checkLayout(const JobLayout& layout) {
  checkWithin(layout.rank, layout.worldSize, "rank");
  checkWithin(layout.localRank, layout.localWorldSize, "local rank");
  checkWithin(layout.nodeRank, layout.numNodes, "node rank");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = distrun::fuzz::asText(data, size);
  size_t mark = text.find(kNodefileMark);
  std::string_view nodefile;
  if (mark != std::string_view::npos) nodefile = text.substr(mark + kNodefileMark.size());
  distrun::MapEnvironment env = environmentOf(text.substr(0, mark), nodefile);
  distrun::HostFacts host{"node001", 4};
  distrun::cluster::ThisTaskOptions options;
  options.pickFreePort = [] { return 29500; };
  distrun::cluster::ThisTask task;
  if (distrun::fuzz::expectingErrors(
          [&] { task = distrun::cluster::thisTask(env, host, options); })) {
    checkLayout(task.layout);
  }
  return 0;
}
