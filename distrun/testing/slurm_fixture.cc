#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {

std::string pythonTorchUnavailableReason() {
  CommandResult r = runCommand("/usr/bin/python3 -c 'import torch.distributed'");
  if (r.exitCode != 0) {
    return "/usr/bin/python3 cannot import torch.distributed (python3-torch, "
           "scripts/install-deps)";
  }
  return "";
}

}  // namespace distrun::testing
