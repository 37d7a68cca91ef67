#include "distrun/submit/sbatch_flags.h"

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/command_line.h"
#include "distrun/common/strings.h"

namespace distrun::submit {
namespace {

// One space-separated list each, read once: sbatch's long options that
// submit has none of, and those of them that take no value.
const std::vector<std::string>& sbatchFlags() {
  static const std::vector<std::string> flags = split(
      "--array --batch --begin --chdir --clusters --comment --constraint --contiguous "
      "--core-spec --cpu-freq --cpus-per-gpu --deadline --delay-boot --dependency "
      "--distribution --error --exclude --exclusive --export --export-file --extra-node-info "
      "--get-user-env --gid --gpu-bind --gpu-freq --gpus --gpus-per-socket --gpus-per-task "
      "--gres --gres-flags --hint --hold --ignore-pbs --input --kill-on-invalid-dep --licenses "
      "--mail-type --mail-user --mcs-label --mem --mem-bind --mem-per-cpu --mem-per-gpu "
      "--mincpus --network --nice --no-kill --no-requeue --nodefile --nodelist --ntasks "
      "--ntasks-per-core --ntasks-per-gpu --ntasks-per-socket --open-mode --overcommit "
      "--oversubscribe --parsable --power --prefer --priority --profile --propagate --reboot "
      "--requeue --reservation --signal --sockets-per-node --spread-job --switches --test-only "
      "--thread-spec --threads-per-core --time-min --tmp --tres-per-task --uid --use-min-nodes "
      "--wait-all-nodes --wckey",
      ' ');
  return flags;
}

bool takesNoValue(const std::string& flag) {
  static const std::vector<std::string> switches = split(
      "--contiguous --exclusive --get-user-env --hold --ignore-pbs --no-kill --no-requeue "
      "--overcommit --oversubscribe --parsable --reboot --requeue --spread-job --test-only "
      "--use-min-nodes",
      ' ');
  return std::find(switches.begin(), switches.end(), flag) != switches.end();
}

}  // namespace

std::optional<std::string> sbatchFlagMessage(const std::vector<std::string>& args) {
  if (args.empty()) return std::nullopt;
  const std::string& arg = args.front();
  const std::string name = arg.substr(0, arg.find('='));
  const std::vector<std::string>& known = sbatchFlags();
  if (std::find(known.begin(), known.end(), name) == known.end()) return std::nullopt;
  std::string form = arg;
  if (arg == name && !takesNoValue(name)) {
    form += "=" + (args.size() > 1 && !looksLikeFlag(args[1]) ? args[1] : "VALUE");
  }
  return fmt::format(
      "submit: {} is sbatch's flag, not distrun submit's: pass it through as --sbatch-arg={}", name,
      form);
}

}  // namespace distrun::submit
