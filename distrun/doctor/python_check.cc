// "python": the Python the training scripts will run imports torch, within
// the time limit, in the task's environment (or inside --container IMAGE).
#include <fmt/format.h>

#include <sstream>

#include "distrun/common/python_choice.h"
#include "distrun/common/strings.h"
#include "distrun/common/tool_process.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

constexpr const char* kPython = "python";
constexpr const char* kImport =
    "import sys, torch; print(torch.__version__, sys.version.split()[0])";
constexpr int kNotFound = 127;  // runTool's exit code for a program that is not there

PythonChoice thePython(const ProbeContext& ctx) {
  return choosePython(ctx.options.python, ctx.env);
}

// "Python 'python3' (the first python3 on PATH)", and the image it runs in.
std::string named(const ProbeContext& ctx) {
  std::string name = describePython(thePython(ctx));
  return ctx.options.container ? name + " in container " + *ctx.options.container : name;
}

std::vector<std::string> pythonArgv(const ProbeContext& ctx) {
  std::vector<std::string> argv;
  if (ctx.options.container) {
    const std::string distrun = ctx.toolDir.empty() ? "distrun" : ctx.toolDir + "/distrun";
    argv = {distrun, "enter", *ctx.options.container, "--"};
  }
  argv.insert(argv.end(), {thePython(ctx).interpreter, "-c", kImport});
  return argv;
}

std::string lastLine(const std::string& text) {
  std::string last;
  for (const std::string& line : split(text, '\n')) {
    if (!trim(line).empty()) last = std::string(trim(line));
  }
  return last;
}

std::string otherPython() { return "--python PATH, DISTRUN_PYTHON=PATH or --container IMAGE"; }

CheckResult imported(const ProbeContext& ctx, const ToolResult& r) {
  const std::string line = lastLine(r.out);
  std::istringstream words(line);
  std::string torch, python;
  if (!(words >> torch >> python)) {
    return fail(
        kPython,
        fmt::format("{} printed '{}' where the versions of torch and Python were expected",
                    named(ctx), line),
        "make sure that program is a Python interpreter, or name another: " + otherPython());
  }
  CheckResult result =
      ok(kPython, fmt::format("torch {}, Python {}: {}", torch, python, named(ctx)));
  result.facts["torch_version"] = torch;
  result.facts["python_version"] = python;
  if (ctx.options.container) result.facts["container"] = *ctx.options.container;
  return result;
}

CheckResult notFound(const ProbeContext& ctx) {
  const std::string& python = thePython(ctx).interpreter;
  const std::string missing =
      named(ctx) + (python.find('/') == std::string::npos ? " is not on PATH" : " does not exist");
  return warn(kPython, missing + ": fine for distrun train, not for Python training scripts",
              "install Python with PyTorch, or name one: " + otherPython());
}

CheckResult timedOut(const ProbeContext& ctx) {
  return fail(kPython,
              fmt::format("{}: -c 'import torch' did not finish within {:g} s", named(ctx),
                          std::chrono::duration<double>(ctx.limit()).count()),
              "something under Python hangs (a hung file system holding site-packages, a lock "
              "there): look at `ps -eo pid,stat,wchan,cmd` on the node, or use another: " +
                  otherPython());
}

CheckResult importFailed(const ProbeContext& ctx, const ToolResult& r) {
  std::string why = lastLine(r.err);
  if (why.empty()) why = fmt::format("-c 'import torch' exited with {}", r.exitCode);
  return fail(
      kPython, named(ctx) + ": " + why,
      "install PyTorch for that Python (pip install torch), or name another: " + otherPython());
}

}  // namespace

CheckResult checkPython(const ProbeContext& ctx) {
  ToolRequest request;
  request.argv = pythonArgv(ctx);
  request.limit = ctx.limit();
  request.environment = ctx.env.all();
  const ToolResult r = runToolWithin(request);
  if (r.timedOut) return timedOut(ctx);
  if (r.exitCode == 0) return imported(ctx, r);
  if (r.exitCode == kNotFound && !ctx.options.container) return notFound(ctx);
  return importFailed(ctx, r);
}

}  // namespace distrun::doctor
