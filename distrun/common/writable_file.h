#pragma once

#include <cstdint>
#include <string>

namespace distrun {

// Checks, before a long job starts, that writeFileAtomically(path) will be
// able to write `path` later: its folder exists and is a folder, `path` is
// not a folder, a file can be created (and is removed again) in the folder,
// and the folder's file system has at least `bytesNeeded` bytes free for an
// unprivileged user. The file itself is not touched. `what` names it in the
// user's words: the flag that gave it ("--snapshot").
//
// Throws IoError (exit 74) as one line, "WHAT PATH: PROBLEM: WHAT TO DO":
//   --snapshot out/s.snap: the folder out does not exist: create it, or choose another path
// Trying the file is what proves writability: root ignores mode bits, and
// a read-only mount or an exhausted quota shows only when one writes.
void checkFileWritable(const std::string& path, const std::string& what, uint64_t bytesNeeded);

// "12.3 MiB": a byte count for messages.
std::string mebibytes(uint64_t bytes);

}  // namespace distrun
