#include "distrun/container/pip_env.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"

namespace distrun::container {

namespace {

namespace fs = std::filesystem;

bool endsWith(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

std::string unquoted(std::string_view text) {
  std::string value(trim(text));
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

// A YAML line without its comment (a '#' at the start or after a space).
std::string withoutComment(const std::string& line) {
  if (!line.empty() && line.front() == '#') return "";
  const size_t hash = line.find(" #");
  return hash == std::string::npos ? line : line.substr(0, hash);
}

size_t indentOf(const std::string& line) { return line.find_first_not_of(' '); }

// A conda list entry's package name: "numpy=1.26" is numpy.
std::string condaName(const std::string& entry) {
  const size_t end = entry.find_first_of("=<>! ");
  return entry.substr(0, end);
}

// "-r other.txt" with a relative file: the file as pip sees it.
std::string withFolder(const std::string& line, const std::string& folder) {
  for (const char* option : {"-r ", "--requirement ", "-c ", "--constraint "}) {
    const std::string prefix = option;
    if (line.rfind(prefix, 0) != 0) continue;
    const std::string file(trim(std::string_view(line).substr(prefix.size())));
    if (!file.empty() && file.front() != '/') return prefix + folder + "/" + file;
  }
  return line;
}

DataError condaRefused(const std::string& file, size_t lineNumber, const std::string& entry) {
  return DataError(fmt::format(
      "{}:{}: conda package '{}' cannot be installed: distrun wrap fills the image's environment "
      "from PyPI with pip and reaches no conda channel; list it under '- pip:' as a PyPI "
      "requirement, or take Debian's with --apt",
      file, lineNumber, entry));
}

bool truthy(const std::string& value) {
  return !value.empty() && value != "0" && value != "false" && value != "no" && value != "off";
}

}  // namespace

PipSource classifyPipArgument(const std::string& value) {
  PipSource source;
  source.text = value;
  if (value.find("://") != std::string::npos) return source;
  if (endsWith(value, ".yml") || endsWith(value, ".yaml")) {
    source.kind = PipSource::Kind::kCondaEnvFile;
  } else if (endsWith(value, ".txt") || endsWith(value, ".in") ||
             value.find('/') != std::string::npos) {
    source.kind = PipSource::Kind::kRequirementsFile;
  } else {
    return source;
  }
  source.text = fs::absolute(value).lexically_normal().string();
  return source;
}

std::vector<std::string> condaEnvPipLines(std::string_view text, const std::string& file,
                                          const std::string& folder) {
  std::vector<std::string> pipLines;
  bool inDependencies = false;
  bool sawPipList = false;
  bool inPipList = false;
  size_t pipIndent = 0;  // the indent of "- pip:" while in its list
  size_t lineNumber = 0;
  for (const std::string& raw : split(std::string(text), '\n')) {
    ++lineNumber;
    const std::string line = withoutComment(raw);
    if (trim(line).empty()) continue;
    const size_t indent = indentOf(line);
    const std::string body(trim(line));
    if (indent == 0) {
      inDependencies = body == "dependencies:";
      inPipList = false;
      continue;
    }
    if (!inDependencies) continue;
    if (body.front() != '-') {
      throw DataError(fmt::format("{}:{}: expected a list entry '- NAME' under dependencies:", file,
                                  lineNumber));
    }
    const std::string entry = unquoted(std::string_view(body).substr(1));
    if (inPipList && indent > pipIndent) {
      pipLines.push_back(withFolder(entry, folder));
      continue;
    }
    inPipList = false;
    if (entry == "pip:") {
      inPipList = true;
      pipIndent = indent;
      sawPipList = true;
      continue;
    }
    const std::string name = condaName(entry);
    if (name != "python" && name != "pip") throw condaRefused(file, lineNumber, entry);
  }
  if (!sawPipList) {
    throw DataError(fmt::format(
        "{}: has no '- pip:' list under dependencies: nothing for pip to install (distrun wrap "
        "takes the pip list of a conda environment file)",
        file));
  }
  return pipLines;
}

std::string hostPipCache(const Environment& env) {
  if (truthy(env.getOr("PIP_NO_CACHE_DIR", ""))) return "";
  const std::string chosen = env.getOr("PIP_CACHE_DIR", "");
  if (!chosen.empty()) return chosen;
  const std::string xdg = env.getOr("XDG_CACHE_HOME", "");
  if (!xdg.empty()) return xdg + "/pip";
  const std::string home = env.getOr("HOME", "");
  return home.empty() ? "" : home + "/.cache/pip";
}

std::string hostPipCert(const Environment& env) {
  for (const char* name : {"PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"}) {
    const std::string path = env.getOr(name, "");
    std::error_code ec;
    if (!path.empty() && fs::is_regular_file(path, ec)) return path;
  }
  return "";
}

std::vector<std::string> condaEnvFilePipLines(const std::string& file, const std::string& folder) {
  auto text = readFileIfPresent(file);
  if (!text) throw IoError(fmt::format("--pip {}: cannot read it", file));
  return condaEnvPipLines(*text, file, folder);
}

std::string pipInputFolder(size_t index) { return fmt::format("/tmp/inputs/{}", index); }

std::string condaRequirementsFile(size_t index) { return fmt::format("conda-{}.txt", index); }

std::vector<std::string> pipInstallArguments(const std::vector<PipSource>& sources,
                                             const std::vector<std::string>& findLinks,
                                             bool noIndex, std::vector<PipBind>& binds) {
  std::vector<std::string> args;
  for (size_t i = 0; i < sources.size(); ++i) {
    const PipSource& source = sources[i];
    if (source.kind == PipSource::Kind::kRequirement) {
      args.push_back(source.text);
      continue;
    }
    const std::string folder = pipInputFolder(i);
    const fs::path file(source.text);
    binds.push_back({file.parent_path().string(), folder});
    args.push_back("-r");
    args.push_back(source.kind == PipSource::Kind::kCondaEnvFile
                       ? "/tmp/" + condaRequirementsFile(i)
                       : folder + "/" + file.filename().string());
  }
  for (size_t i = 0; i < findLinks.size(); ++i) {
    std::string where = findLinks[i];
    if (where.find("://") == std::string::npos) {
      binds.push_back({where, fmt::format("/tmp/links/{}", i)});
      where = binds.back().inSandbox;
    }
    args.push_back("--find-links");
    args.push_back(where);
  }
  if (noIndex) args.push_back("--no-index");
  return args;
}

std::vector<std::string> pipSandboxCommand(const std::string& root, const PipPaths& paths,
                                           const std::vector<PipBind>& binds,
                                           const std::vector<std::string>& passed,
                                           const std::vector<std::string>& program) {
  std::vector<std::string> argv = {"bwrap",
                                   "--bind",
                                   root,
                                   "/",
                                   "--proc",
                                   "/proc",
                                   "--dev",
                                   "/dev",
                                   "--bind",
                                   paths.hostTmp,
                                   "/tmp",
                                   "--ro-bind-try",
                                   "/etc/resolv.conf",
                                   "/etc/resolv.conf"};
  if (!paths.hostCache.empty()) {
    argv.insert(argv.end(), {"--bind", paths.hostCache, kPipCacheInSandbox});
  }
  if (!paths.hostCert.empty()) {
    argv.insert(argv.end(), {"--ro-bind", paths.hostCert, kPipCertInSandbox});
  }
  for (const PipBind& bind : binds)
    argv.insert(argv.end(), {"--ro-bind", bind.host, bind.inSandbox});
  argv.insert(argv.end(),
              {"--chdir", "/tmp", "--unshare-pid", "--die-with-parent", "--clearenv", "--setenv",
               "PATH", fmt::format("{}:/usr/local/bin:/usr/bin:/bin", kPythonEnvBin), "--setenv",
               "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8"});
  for (const std::string& variable : passed) {
    const size_t eq = variable.find('=');
    argv.insert(argv.end(), {"--setenv", variable.substr(0, eq), variable.substr(eq + 1)});
  }
  if (paths.hostCache.empty()) {
    argv.insert(argv.end(), {"--setenv", "PIP_NO_CACHE_DIR", "1"});
  } else {
    argv.insert(argv.end(), {"--setenv", "PIP_CACHE_DIR", kPipCacheInSandbox});
  }
  if (!paths.hostCert.empty()) argv.insert(argv.end(), {"--setenv", "PIP_CERT", kPipCertInSandbox});
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> passedPipVariables(const Environment& env) {
  static const std::vector<std::string> hostPaths = {
      "PIP_CACHE_DIR", "PIP_CERT",   "PIP_CONFIG_FILE", "PIP_FIND_LINKS",
      "PIP_TARGET",    "PIP_PREFIX", "PIP_SRC",         "PIP_NO_CACHE_DIR"};
  static const std::vector<std::string> proxies = {"http_proxy", "https_proxy", "no_proxy",
                                                   "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"};
  std::vector<std::string> passed;
  for (const auto& [name, value] : env.all()) {
    const bool pip = name.rfind("PIP_", 0) == 0 &&
                     std::find(hostPaths.begin(), hostPaths.end(), name) == hostPaths.end();
    const bool proxy = std::find(proxies.begin(), proxies.end(), name) != proxies.end();
    if (pip || proxy) passed.push_back(name + "=" + value);
  }
  return passed;
}

std::string pipFailureReason(std::string_view output) {
  std::string notFound, firstError, ignored;
  for (const std::string& raw : split(std::string(output), '\n')) {
    const std::string line(trim(raw));
    if (line.rfind("ERROR: ", 0) != 0) continue;
    const std::string message = line.substr(7);
    if (message.rfind("Ignored the following versions", 0) == 0) {
      ignored = message;
    } else if (message.rfind("Could not find a version", 0) == 0 && notFound.empty()) {
      notFound = message;
    } else if (firstError.empty()) {
      firstError = message;
    }
  }
  std::string reason = notFound.empty() ? firstError : notFound;
  if (reason.empty())
    reason = ignored;
  else if (!ignored.empty())
    reason += "; " + ignored;
  return reason;
}

std::string lastPipLine(std::string_view output) {
  std::vector<std::string> lines = split(std::string(output), '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const size_t cr = it->rfind('\r');
    const std::string line(trim(cr == std::string::npos ? *it : it->substr(cr + 1)));
    if (!line.empty()) return line;
  }
  return "";
}

std::string mergedLabels(const std::string& existing,
                         const std::vector<std::pair<std::string, std::string>>& labels) {
  nlohmann::json json = nlohmann::json::parse(existing, nullptr, false);
  if (!json.is_object()) json = nlohmann::json::object();
  for (const auto& [key, value] : labels) json[key] = value;
  return json.dump(2) + "\n";
}

std::string describeLabels(const std::string& image, const std::string& labelsText) {
  nlohmann::json json = nlohmann::json::parse(labelsText, nullptr, false);
  if (!json.is_object()) {
    throw DataError(fmt::format("{}: its {} is not a JSON object: the image's labels are damaged",
                                image, kLabelsFile));
  }
  auto text = [&json](const char* key) {
    auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string apt = text(kAptLabel), env = text(kPythonEnvLabel),
                    freeze = text(kPipFreezeLabel);
  if (apt.empty() && env.empty()) {
    throw DataError(fmt::format(
        "{}: its labels ({}) list nothing distrun wrap installed: it was not built with distrun "
        "wrap --apt or --pip",
        image, kLabelsFile));
  }
  std::string out = fmt::format("# {}: built by distrun wrap\n", image);
  if (!apt.empty()) out += fmt::format("# --apt {}\n", apt);
  if (!env.empty()) out += fmt::format("# {} (pip freeze):\n{}", env, freeze);
  if (!out.empty() && out.back() != '\n') out += "\n";
  return out;
}

}  // namespace distrun::container
