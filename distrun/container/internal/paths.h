#pragma once

// Absolute, normalised paths (on the host or inside an image) as the
// container code builds and compares them: one definition each, shared by
// the mount plan, the runtime's command line, the wrappers and staging.
#include <string>

namespace distrun::container::detail {

// `name` in `folder`, without doubling the root's slash: ("/", "etc") gives
// "/etc", ("/opt", "bin") "/opt/bin".
inline std::string childPath(const std::string& folder, const std::string& name) {
  return folder == "/" ? "/" + name : folder + "/" + name;
}

// True when `path` is `folder` or lies under it: "/a/b" is under "/a",
// "/ab" is not, and every path is under "/".
inline bool atOrUnder(const std::string& path, const std::string& folder) {
  if (folder == "/") return true;
  return path.compare(0, folder.size(), folder) == 0 &&
         (path.size() == folder.size() || path[folder.size()] == '/');
}

// True when `path` lies under `folder` and is not `folder` itself.
inline bool strictlyUnder(const std::string& path, const std::string& folder) {
  return path != folder && atOrUnder(path, folder);
}

}  // namespace distrun::container::detail
