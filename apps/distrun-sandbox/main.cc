// distrun-sandbox: the two processes around a program in distrun's own
// container runtime (distrun/container/sandbox_process.h). Linked
// statically, so that it runs inside any image.
#include <string>
#include <vector>

#include "distrun/container/sandbox_process.h"

int main(int argc, char** argv) {
  return distrun::container::runSandboxTool(std::vector<std::string>(argv + 1, argv + argc));
}
