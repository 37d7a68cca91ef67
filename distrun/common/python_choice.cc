#include "distrun/common/python_choice.h"

namespace distrun {

PythonChoice choosePython(const std::optional<std::string>& flag, const Environment& env) {
  if (flag) return {*flag, "from --python"};
  for (const char* variable : {"DISTRUN_PYTHON", "PYTHON_EXEC"}) {
    std::optional<std::string> value = env.get(variable);
    if (value && !value->empty()) return {*value, std::string("from ") + variable};
  }
  return {"python3", "the first python3 on PATH"};
}

std::string describePython(const PythonChoice& python) {
  return "Python '" + python.interpreter + "' (" + python.source + ")";
}

}  // namespace distrun
