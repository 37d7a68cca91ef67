#pragma once

// What the user asked of a container: the image, the binds and the runtime
// (--container, --bind, --container-runtime of run, exec, train, bench and
// submit). Parsing only; ContainerSession does the work.
#include <optional>
#include <string>
#include <vector>

namespace distrun::container {

// A host path made visible inside the container (--bind SRC[:DST[:ro]],
// Apptainer's spelling; a site profile's `bind` lines).
struct Bind {
  std::string source;       // host path, absolute
  std::string destination;  // path inside; the source's when not given
  bool readOnly = false;
};

// Parses SRC[:DST[:ro|rw]]. Throws UsageError naming `flag` ("--bind") and
// what was expected: an absolute SRC (a relative one is made absolute
// against the working directory first), an absolute DST, ro or rw.
Bind parseBind(const std::string& text, const std::string& flag = "--bind");

// --container-runtime: auto (Apptainer, else Singularity, when on PATH;
// else distrun's own), or one of them by name.
enum class RuntimeChoice { kAuto, kApptainer, kSingularity, kDistrun };

// Throws UsageError naming --container-runtime and the four choices.
RuntimeChoice parseRuntimeChoice(const std::string& text);
std::string runtimeName(RuntimeChoice choice);

// The flags as given (--container, --bind, --container-runtime), before
// the checks that make a ContainerRequest of them (cli/container_flags.h).
struct ContainerFlags {
  std::optional<std::string> image;
  std::vector<std::string> binds;
  std::string runtime = "auto";
};

struct ContainerRequest {
  std::string image;        // as given to --container
  std::vector<Bind> binds;  // --bind in order, then the site profile's
  RuntimeChoice runtime = RuntimeChoice::kAuto;
};

}  // namespace distrun::container
