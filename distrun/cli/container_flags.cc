#include "distrun/cli/container_flags.h"

#include <sys/stat.h>

#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/container/image_file.h"

namespace distrun::cli {

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

container::Bind userBind(const std::string& text) {
  container::Bind bind = container::parseBind(text);
  if (!exists(bind.source)) {
    throw UsageError(
        fmt::format("--bind {}: {} does not exist on this host: bind an existing "
                    "file or folder",
                    text, bind.source));
  }
  return bind;
}

void addSiteBinds(const cluster::SiteProfile& site, std::vector<container::Bind>& binds) {
  for (const std::string& text : site.binds) {
    container::Bind bind = container::parseBind(text, "site profile " + site.path + ": bind");
    if (exists(bind.source)) binds.push_back(bind);
  }
}

void refuseWithoutImage(const ContainerFlags& flags) {
  if (!flags.binds.empty()) {
    throw UsageError(
        fmt::format("--bind {}: no --container IMAGE to bind it into: add "
                    "--container or drop --bind",
                    flags.binds.front()));
  }
  if (flags.runtime != "auto") {
    throw UsageError(
        fmt::format("--container-runtime {}: no --container IMAGE to run: add "
                    "--container or drop --container-runtime",
                    flags.runtime));
  }
}

}  // namespace

void addContainerFlags(CLI::App* cmd, ContainerFlags& flags) {
  cmd->add_option("--container", flags.image,
                  "run the workers inside IMAGE (.sif or SquashFS; see docs/containers.md)");
  addBindFlags(cmd, flags);
}

void addBindFlags(CLI::App* cmd, ContainerFlags& flags) {
  cmd->add_option("--bind", flags.binds,
                  "SRC[:DST[:ro]]: a host path inside the container (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--container-runtime", flags.runtime,
                  "auto (apptainer, singularity, else distrun's), apptainer, singularity or "
                  "distrun");
}

std::optional<container::ContainerRequest> containerRequest(
    const ContainerFlags& flags, const std::optional<std::string>& siteName, const Environment& env,
    const CliContext& ctx) {
  container::RuntimeChoice runtime = container::parseRuntimeChoice(flags.runtime);
  if (!flags.image) {
    refuseWithoutImage(flags);
    return std::nullopt;
  }
  container::ContainerRequest request;
  request.image = container::openImage(*flags.image).path;
  request.runtime = runtime;
  for (const std::string& text : flags.binds) request.binds.push_back(userBind(text));
  std::optional<cluster::SiteProfile> site =
      cluster::selectSiteProfile(siteName, env, cluster::siteSearchPath(env, ctx.builtinSiteDir));
  if (site) addSiteBinds(*site, request.binds);
  const std::string& tools = ctx.toolDir;
  if (!tools.empty() && exists(tools)) request.binds.push_back({tools, tools, true});
  return request;
}

std::vector<std::string> containerArguments(const ContainerFlags& flags) {
  if (!flags.image) return {};
  std::vector<std::string> args = {
      "--container", std::filesystem::absolute(*flags.image).lexically_normal().string()};
  for (const std::string& text : flags.binds) {
    container::Bind bind = container::parseBind(text);
    args.insert(args.end(), {"--bind", fmt::format("{}:{}{}", bind.source, bind.destination,
                                                   bind.readOnly ? ":ro" : "")});
  }
  if (flags.runtime != "auto") args.insert(args.end(), {"--container-runtime", flags.runtime});
  return args;
}

ContainerFlags takeContainerFlags(std::vector<std::string>& args) {
  ContainerFlags flags;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    std::optional<std::string> value;
    if (size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a.resize(eq);
    }
    bool ours = a == "--container" || a == "--bind" || a == "--container-runtime";
    if (!ours) {
      rest.push_back(args[i]);
      continue;
    }
    if (!value && i + 1 >= args.size()) throw UsageError(a + ": expected a value after it");
    if (!value) value = args[++i];
    if (a == "--container") flags.image = *value;
    if (a == "--bind") flags.binds.push_back(*value);
    if (a == "--container-runtime") flags.runtime = *value;
  }
  args = rest;
  return flags;
}

}  // namespace distrun::cli
