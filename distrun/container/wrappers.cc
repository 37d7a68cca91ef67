#include "distrun/container/wrappers.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/container/internal/paths.h"
#include "distrun/container/pip_env.h"
#include "distrun/container/staging_tree.h"

namespace distrun::container {

namespace {

namespace fs = std::filesystem;

constexpr const char* kPython = "/usr/bin/python3";

// Whether `pathInImage` is an executable file once resolved in the image.
bool isExecutable(const std::string& root, const std::string& pathInImage) {
  struct stat st {};
  const std::string host = resolveInRoot(root, pathInImage);
  return ::stat(host.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

bool isFolder(const std::string& root, const std::string& pathInImage) {
  std::error_code ec;
  return fs::is_directory(resolveInRoot(root, pathInImage), ec);
}

std::vector<std::string> namesIn(const std::string& root, const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(resolveInRoot(root, folder), ec)) {
    std::string name = entry.path().filename().string();
    if (!name.empty() && name.front() != '.') names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::string wrapperScript(const std::string& distrun, const std::string& image,
                          const WrappedProgram& program) {
  const std::string quotedImage = shellQuote(image);
  const std::string quotedProgram = shellQuote(program.pathInImage);
  return fmt::format(
      "#!/bin/sh\n"
      "# Written by distrun wrap: runs {program} inside the image {image}.\n"
      "if [ \"${{DISTRUN_CONTAINER:-}}\" = {qimage} ]; then\n"
      "  exec {qprogram} \"$@\"\n"
      "fi\n"
      "exec {qdistrun} enter {qimage} -- {qprogram} \"$@\"\n",
      fmt::arg("program", program.pathInImage), fmt::arg("image", image),
      fmt::arg("qimage", quotedImage), fmt::arg("qprogram", quotedProgram),
      fmt::arg("qdistrun", shellQuote(distrun)));
}

std::vector<std::string> defaultWrapPaths(const std::string& root,
                                          const std::vector<DirSource>& dirs) {
  std::vector<std::string> paths;
  for (const DirSource& dir : dirs) {
    const std::string bin = detail::childPath(dir.destination, "bin");
    if (isFolder(root, bin)) paths.push_back(bin);
  }
  if (isFolder(root, kPythonEnvBin) &&
      std::find(paths.begin(), paths.end(), kPythonEnvBin) == paths.end()) {
    paths.push_back(kPythonEnvBin);
  }
  if (isExecutable(root, kPython)) paths.push_back(kPython);
  return paths;
}

std::vector<WrappedProgram> programsToWrap(const std::string& root,
                                           const std::vector<std::string>& paths) {
  std::vector<WrappedProgram> programs;
  std::set<std::string> seen;
  auto add = [&](const std::string& name, const std::string& pathInImage) {
    if (isExecutable(root, pathInImage) && seen.insert(name).second) {
      programs.push_back({name, pathInImage});
    }
  };
  for (const std::string& path : paths) {
    if (isFolder(root, path)) {
      for (const std::string& name : namesIn(root, path)) add(name, detail::childPath(path, name));
    } else {
      add(fs::path(path).filename().string(), path);
    }
  }
  return programs;
}

void writeWrappers(const std::string& prefix, const std::string& distrun, const std::string& image,
                   const std::vector<WrappedProgram>& programs) {
  const std::string bin = prefix + "/bin";
  std::error_code ec;
  fs::create_directories(bin, ec);
  if (ec)
    throw IoError(fmt::format("--wrappers {}: cannot create {}: {}", prefix, bin, ec.message()));
  for (const WrappedProgram& program : programs) {
    const std::string path = bin + "/" + program.name;
    writeFileAtomically(path, wrapperScript(distrun, image, program), "wrapper");
    if (::chmod(path.c_str(), 0755) != 0) {
      throw IoError(
          fmt::format("wrapper {}: cannot make it executable: {}", path, std::strerror(errno)));
    }
  }
}

}  // namespace distrun::container
