#pragma once

// The one rule for which Python runs a job's Python code, shared by
// `distrun run` (and the torchrun link), the scripts of `distrun submit`
// and `distrun doctor`'s python check, so that the doctor tests the Python
// the training will use.
#include <optional>
#include <string>

#include "distrun/common/environment.h"

namespace distrun {

// The interpreter and where it came from, for every message about it.
struct PythonChoice {
  std::string interpreter;  // as given: "python3", "/opt/py/bin/python"
  std::string source;       // "from --python", "from DISTRUN_PYTHON", "the first python3 on PATH"
};

// --python (`flag`), else $DISTRUN_PYTHON, else $PYTHON_EXEC (torchrun's),
// else python3 on PATH. An empty variable counts as unset.
PythonChoice choosePython(const std::optional<std::string>& flag, const Environment& env);

// "Python 'python3' (the first python3 on PATH)": how messages name it.
std::string describePython(const PythonChoice& python);

}  // namespace distrun
