#pragma once

#include <string>
#include <string_view>

namespace distrun {

// Replaces `path` with `contents` so that a reader (or a crash at any
// moment) sees either the old file or the whole new one, never a part:
// the bytes go to a temporary file beside it (`path.tmp.<pid>`), which is
// fsynced, renamed over `path`, and then the folder is fsynced so the
// rename itself is durable. `what` names the file in errors, in the
// user's words ("snapshot", "--metrics", "failure report").
//
// Throws IoError naming `what`, the path, the step that failed and
// strerror(errno): the folder is missing or not writable, the disk is
// full, ... The temporary file is removed on failure; `path` is untouched.
void writeFileAtomically(const std::string& path, std::string_view contents,
                         const std::string& what);

}  // namespace distrun
