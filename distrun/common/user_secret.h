#pragma once

#include <string>

#include "distrun/common/environment.h"

namespace distrun {

// The user's secret: 32 random bytes (in hex) in a file only the user can
// read, from which every job token that distrun derives is computed with
// HMAC-SHA256, so that nobody else can compute a job's token from its
// public ids (docs/security.md). Functions here are thread-compatible.

// $XDG_CONFIG_HOME/distrun/secret, else $HOME/.config/distrun/secret, else
// the same under the password database's home of this user.
std::string userSecretPath(const Environment& env);

// The secret in `path`, created first when absent (its folder 0700, the file
// 0600, written aside then linked into place, so that tasks that race on a
// shared home all read the one that won). Like ssh with a private key, it
// refuses a file that another user owns or that group or others may read or
// write, or a folder that they may write: ConfigError naming the file and the
// fix. IoError when the file cannot be read or written.
std::string loadUserSecret(const std::string& path);

// `bytes` random bytes (getrandom(2), the kernel's urandom source) in hex.
// Throws IoError when the kernel cannot give them.
std::string randomHex(size_t bytes);

// The job token for `what` (the job's ids; a label first, such as
// "slurm:JOB:STEP"): hex of HMAC-SHA256(the user's secret, what).
std::string derivedToken(const Environment& env, const std::string& what);

}  // namespace distrun
