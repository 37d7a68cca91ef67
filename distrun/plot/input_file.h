#pragma once

#include <string>

namespace distrun::plot {

// The whole content of an input file of `distrun plot`. `what` names it in
// errors, the kind and the path ("metrics file m.json"), and `expected`
// says what to give instead ("the file `distrun train --metrics FILE`
// wrote"). Throws Error kNoInput (66) when it does not exist or is a
// folder, IoError (74) when it cannot be read.
std::string readInputFile(const std::string& path, const std::string& what,
                          const std::string& expected);

// A JSON library's message without its "[json.exception.x.y] " tag.
std::string jsonReason(const std::string& message);

}  // namespace distrun::plot
