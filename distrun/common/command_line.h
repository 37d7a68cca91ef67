#pragma once

// The one way distrun's programs turn a command line into an exit status
// (header-only; the program links CLI11).
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "distrun/common/error.h"

namespace distrun {

// Parses `args` with `app`, then runs `body` (returning the exit status).
// --help prints and returns 0; a parse error prints "NAME: error: WHAT (see
// 'NAME --help')" and returns 64; an error thrown by `body` prints "NAME:
// error: WHAT" and returns its exit code (exitCodeFor).
template <class Body>
int parseAndRun(CLI::App& app, const std::vector<std::string>& args, const std::string& name,
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
    err << name << ": error: " << e.what() << " (see '" << name << " --help')\n";
    return toInt(ExitCode::kUsage);
  } catch (const std::exception& e) {
    err << name << ": error: " << e.what() << "\n";
    return toInt(exitCodeFor(e));
  }
}

}  // namespace distrun
