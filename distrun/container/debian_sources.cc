#include "distrun/container/debian_sources.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "distrun/common/strings.h"
#include "distrun/common/system.h"

namespace distrun::container {

namespace {

namespace fs = std::filesystem;

std::string unquote(std::string_view value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  return std::string(value);
}

bool isSourcesFile(const fs::path& path) {
  return path.extension() == ".list" || path.extension() == ".sources";
}

std::vector<std::string> candidateFiles(const std::string& aptDir) {
  std::vector<std::string> files = {aptDir + "/sources.list"};
  std::vector<std::string> parts;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(aptDir + "/sources.list.d", ec)) {
    if (entry.is_regular_file(ec) && isSourcesFile(entry.path())) {
      parts.push_back(entry.path().string());
    }
  }
  std::sort(parts.begin(), parts.end());
  files.insert(files.end(), parts.begin(), parts.end());
  return files;
}

}  // namespace

std::string codenameFromOsRelease(const std::string& text) {
  std::istringstream lines(text);
  const std::string key = "VERSION_CODENAME=";
  for (std::string line; std::getline(lines, line);) {
    std::string_view l = trim(line);
    if (l.substr(0, key.size()) == key) return unquote(trim(l.substr(key.size())));
  }
  return "";
}

std::string hostCodename() {
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    std::string codename = codenameFromOsRelease(readFileIfPresent(path).value_or(""));
    if (!codename.empty()) return codename;
  }
  return "";
}

bool sourcesNameSuite(const std::string& text, const std::string& suite) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::string_view l = trim(line);
    if (l.empty() || l.front() == '#') continue;
    std::istringstream words{std::string(l)};
    for (std::string word; words >> word;) {
      if (word == suite) return true;
    }
  }
  return false;
}

std::vector<std::string> hostSourcesFor(const std::string& suite, const std::string& aptDir) {
  std::vector<std::string> found;
  for (const std::string& file : candidateFiles(aptDir)) {
    if (sourcesNameSuite(readFileIfPresent(file).value_or(""), suite)) found.push_back(file);
  }
  return found;
}

}  // namespace distrun::container
