#include "distrun/cluster/site_profile.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/system.h"

namespace distrun::cluster {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kExtension = ".site";

struct ProfileLine {
  const std::string& path;
  int number;
  [[noreturn]] void fail(const std::string& expected) const {
    throw ConfigError(fmt::format("site profile {}:{}: {}", path, number, expected));
  }
};

// Splits "NAME = value" at the first '='; both sides trimmed.
std::pair<std::string, std::string> assignment(std::string_view text, const ProfileLine& line) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) line.fail("expected 'NAME = value'");
  std::string name(trim(text.substr(0, eq)));
  if (name.empty() || name.find_first_of(" \t") != std::string::npos) {
    line.fail(fmt::format("expected one variable name before '=', found '{}'", name));
  }
  return {name, std::string(trim(text.substr(eq + 1)))};
}

const std::vector<std::string> kSubmitKeys = {"partition", "account", "qos", "time",
                                              "gpus-per-node"};

void checkSubmitKey(const std::string& key, const ProfileLine& line) {
  if (std::find(kSubmitKeys.begin(), kSubmitKeys.end(), key) != kSubmitKeys.end()) return;
  std::optional<std::string> near = closestName(key, kSubmitKeys);
  line.fail(fmt::format("'submit {}': expected one of {}{}", key, join(kSubmitKeys, ", "),
                        near ? " (did you mean " + *near + "?)" : ""));
}

void parseLine(std::string_view text, const ProfileLine& line, SiteProfile& profile) {
  size_t space = text.find_first_of(" \t=");
  std::string keyword(text.substr(0, space));
  std::string_view rest = space == std::string_view::npos ? "" : trim(text.substr(space));
  if (keyword == "description") {
    if (rest.empty() || rest[0] != '=') line.fail("expected 'description = TEXT'");
    profile.description = std::string(trim(rest.substr(1)));
  } else if (keyword == "match") {
    auto [variable, pattern] = assignment(rest, line);
    profile.matches.push_back({variable, pattern});
  } else if (keyword == "set") {
    auto [variable, value] = assignment(rest, line);
    profile.settings.push_back({variable, value});
  } else if (keyword == "submit") {
    auto [key, value] = assignment(rest, line);
    checkSubmitKey(key, line);
    profile.submitDefaults[key] = value;
  } else if (keyword == "gpu-visibility") {
    if (rest.empty() || rest[0] != '=' || trim(rest.substr(1)).empty()) {
      line.fail(
          "expected 'gpu-visibility = VARIABLE' (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES)");
    }
    profile.gpuVisibility = std::string(trim(rest.substr(1)));
  } else if (keyword == "node") {
    if (!profile.node) profile.node = binding::NodeTopology{};
    binding::addTopologyLine(*profile.node, rest,
                             fmt::format("site profile {}:{}", line.path, line.number));
  } else if (keyword == "node-dir") {
    if (rest.empty()) line.fail("expected 'node-dir VARIABLE'");
    profile.nodeDirs.emplace_back(rest);
  } else if (keyword == "bind") {
    if (rest.empty() || rest[0] != '/') line.fail("expected 'bind /HOST/PATH[:/PATH/INSIDE[:ro]]'");
    profile.binds.emplace_back(rest);
  } else {
    line.fail(
        fmt::format("expected description, match, set, node-dir, node, submit, "
                    "gpu-visibility or bind, found '{}'",
                    keyword));
  }
}

}  // namespace

bool SiteProfile::appliesTo(const Environment& env) const {
  if (matches.empty()) return false;
  for (const Match& m : matches) {
    std::optional<std::string> value = env.get(m.variable);
    if (!value || !globMatch(m.pattern, *value)) return false;
  }
  return true;
}

SiteProfile parseSiteProfile(const std::string& text, const std::string& name,
                             const std::string& path) {
  SiteProfile profile;
  profile.name = name;
  profile.path = path;
  int number = 0;
  for (const std::string& raw : split(text, '\n')) {
    ++number;
    std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    parseLine(line, ProfileLine{path, number}, profile);
  }
  if (profile.node) {
    profile.node->source = "the site profile " + path;
    profile.node->validate();
  }
  return profile;
}

std::vector<std::string> siteSearchPath(const Environment& env, const std::string& builtinDir) {
  std::vector<std::string> path;
  if (auto extra = env.get("DISTRUN_SITE_PATH")) {
    for (const std::string& dir : split(*extra, ':')) {
      if (!dir.empty()) path.push_back(dir);
    }
  }
  path.push_back(builtinDir);
  return path;
}

std::vector<std::string> listSiteProfiles(const std::vector<std::string>& path) {
  std::set<std::string> names;
  for (const std::string& dir : path) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == kExtension) {
        names.insert(entry.path().stem().string());
      }
    }
  }
  return {names.begin(), names.end()};
}

SiteProfile loadSiteProfile(const std::string& name, const std::vector<std::string>& path) {
  for (const std::string& dir : path) {
    fs::path file = fs::path(dir) / (name + std::string(kExtension));
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) {
      return parseSiteProfile(readTextFile(file.string(), "site profile"), name, file.string());
    }
  }
  std::vector<std::string> known = listSiteProfiles(path);
  throw ConfigError(fmt::format("site profile '{}' not found in {}: expected one of {} (or none)",
                                name, join(path, ":"),
                                known.empty() ? "(no profiles)" : join(known, ", ")));
}

std::optional<SiteProfile> selectSiteProfile(const std::optional<std::string>& requested,
                                             const Environment& env,
                                             const std::vector<std::string>& path) {
  std::optional<std::string> name = requested;
  if (!name) name = env.get("DISTRUN_SITE");
  if (name) {
    if (*name == "none") return std::nullopt;
    return loadSiteProfile(*name, path);
  }
  std::vector<std::string> known = listSiteProfiles(path);
  for (const std::string& candidate : known) {
    SiteProfile profile = loadSiteProfile(candidate, path);
    if (profile.appliesTo(env)) return profile;
  }
  if (std::find(known.begin(), known.end(), "generic") != known.end()) {
    return loadSiteProfile("generic", path);
  }
  return std::nullopt;
}

namespace {

std::string readLoginName() {
  const uid_t uid = ::geteuid();
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    return found->pw_name;
  }
  return "uid" + std::to_string(uid);
}

}  // namespace

// Read once a process: every worker's environment asks (the password
// database's files cost 0.1 ms a read, bench/launch.sh).
const std::string& loginName() {
  static const std::string name = readLoginName();
  return name;
}

MapEnvironment siteFallbacks(int nodeRank, const std::string& jobId) {
  return MapEnvironment{{"USER", loginName()},
                        {"SLURM_NODEID", std::to_string(nodeRank)},
                        {"SLURM_JOB_ID", jobId.empty() ? kNoJobId : jobId}};
}

std::string expandSiteValue(const std::string& value, const Environment& env,
                            const std::string& profileName) {
  std::string out;
  size_t pos = 0;
  while (pos < value.size()) {
    size_t start = value.find("${", pos);
    if (start == std::string::npos) break;
    size_t end = value.find('}', start);
    if (end == std::string::npos) {
      throw ConfigError(fmt::format("site profile {}: unclosed '${{' in '{}'", profileName, value));
    }
    out += value.substr(pos, start - pos);
    std::string variable = value.substr(start + 2, end - start - 2);
    std::optional<std::string> replacement = env.get(variable);
    if (!replacement) {
      throw ConfigError(fmt::format("site profile {}: '{}' uses ${{{}}}, which is not set",
                                    profileName, value, variable));
    }
    out += *replacement;
    pos = end + 1;
  }
  return out + value.substr(pos);
}

}  // namespace distrun::cluster
