#pragma once

// The one way distrun's programs turn a command line into an exit status
// (header-only; the program links CLI11).
#include <exception>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun {

// Whether `arg` is a flag rather than a value or a program: "-x", "--x=1",
// but not "-" (standard input) or "".
inline bool looksLikeFlag(const std::string& arg) { return arg.size() > 1 && arg[0] == '-'; }

// "unknown flag --maxbyte: did you mean --maxbytes?" for an argument `app`
// does not know (`arg` may carry "=VALUE"), the nearest being one of its
// long names; with none close, "unknown flag -x (see 'HELP --help')".
inline std::string unknownFlagMessage(const CLI::App& app, const std::string& arg,
                                      const std::string& help) {
  const std::string name = arg.substr(0, arg.find('='));
  std::vector<std::string> known;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& n : option->get_lnames()) known.push_back("--" + n);
  }
  if (auto nearest = closestName(name, known)) {
    return "unknown flag " + name + ": did you mean " + *nearest + "?";
  }
  return "unknown flag " + name + " (see '" + help + " --help')";
}

// The first of the arguments `app` did not take (app.remaining()) that
// looks like a flag; empty if none.
inline std::string firstUnknownFlag(const CLI::App& app) {
  for (const std::string& arg : app.remaining()) {
    if (looksLikeFlag(arg)) return arg;
  }
  return "";
}

// Parses `args` with `app`, then runs `body` (returning the exit status).
// --help prints and returns 0; a parse error prints "distrun: error: WHAT
// (see 'HELP --help')" (kErrorPrefix) and returns 64, WHAT naming the
// first unknown flag and the nearest known one (unknownFlagMessage) when
// there is one; an error thrown by `body` prints "distrun: error: WHAT" and
// returns its exit code (exitCodeFor), a ReportedError just the code.
// `help` names the command the user typed ("distrun bench").
template <class Body>
int parseAndRun(CLI::App& app, const std::vector<std::string>& args, const std::string& help,
                std::ostream& out, std::ostream& err, Body&& body) {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
    return body();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app.exit(e, out, err);
      return 0;
    }
    const std::string flag = dynamic_cast<const CLI::ExtrasError*>(&e) ? firstUnknownFlag(app) : "";
    if (!flag.empty()) {
      err << kErrorPrefix << unknownFlagMessage(app, flag, help) << "\n";
      return toInt(ExitCode::kUsage);
    }
    err << kErrorPrefix << e.what() << " (see '" << help << " --help')\n";
    return toInt(ExitCode::kUsage);
  } catch (const ReportedError& e) {
    return toInt(e.exitCode());
  } catch (const std::exception& e) {
    err << kErrorPrefix << e.what() << "\n";
    return toInt(exitCodeFor(e));
  }
}

}  // namespace distrun
