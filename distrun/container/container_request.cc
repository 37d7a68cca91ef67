#include "distrun/container/container_request.h"

#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::container {

namespace {

UsageError badBind(const std::string& flag, const std::string& text, const std::string& what) {
  return UsageError(
      fmt::format("{} {}: {}: expected SRC[:DST[:ro]] with an absolute DST", flag, text, what));
}

}  // namespace

Bind parseBind(const std::string& text, const std::string& flag) {
  std::vector<std::string> parts = split(text, ':');
  if (parts.empty() || parts.size() > 3 || parts[0].empty()) {
    throw badBind(flag, text, "not SRC, SRC:DST or SRC:DST:ro");
  }
  Bind bind;
  bind.source = std::filesystem::absolute(parts[0]).lexically_normal().string();
  bind.destination = parts.size() > 1 && !parts[1].empty() ? parts[1] : bind.source;
  if (bind.destination.front() != '/') throw badBind(flag, text, "DST is not absolute");
  if (parts.size() == 3) {
    if (parts[2] != "ro" && parts[2] != "rw")
      throw badBind(flag, text, "the option is not ro or rw");
    bind.readOnly = parts[2] == "ro";
  }
  return bind;
}

RuntimeChoice parseRuntimeChoice(const std::string& text) {
  for (RuntimeChoice c : {RuntimeChoice::kAuto, RuntimeChoice::kApptainer,
                          RuntimeChoice::kSingularity, RuntimeChoice::kDistrun}) {
    if (runtimeName(c) == text) return c;
  }
  throw UsageError(fmt::format(
      "--container-runtime {}: expected auto, apptainer, singularity or distrun", text));
}

std::string runtimeName(RuntimeChoice choice) {
  switch (choice) {
    case RuntimeChoice::kApptainer:
      return "apptainer";
    case RuntimeChoice::kSingularity:
      return "singularity";
    case RuntimeChoice::kDistrun:
      return "distrun";
    case RuntimeChoice::kAuto:
      break;
  }
  return "auto";
}

}  // namespace distrun::container
