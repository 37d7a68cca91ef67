#pragma once

// The collectives' tuning variables (DISTRUN_COMM_*, DISTRUN_GLOO_*): one
// table, read in one place (readTuning, called by connect()). Each row
// names its variable, what it takes and what it sets; the defaults are
// GlooOptions', MpiThreads' and the reduction kernels' own. docs/comm.md
// lists them.

#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "distrun/comm/gloo/gloo_communicator.h"
#include "distrun/comm/mpi/mpi_communicator.h"
#include "distrun/comm/reduce.h"
#include "distrun/common/environment.h"

namespace distrun::comm {

// What the variables set, each field at its default where its variable is
// unset.
struct CommTuning {
  GlooOptions gloo;
  std::optional<std::chrono::milliseconds> timeout;  // unset: 300 s
  std::optional<Instructions> instructions;          // unset: chosen per type
  MpiThreads mpiThreads = MpiThreads::kSerialized;
};

struct TuningVariable {
  const char* name;
  const char* takes;  // in a user's words: "bytes", "0 or 1", ...
  // Sets `tuning` from `text` (the variable's value); throws ConfigError
  // naming `name` and what it takes.
  void (*read)(const char* name, const std::string& text, CommTuning& tuning);
};

// Every tuning variable, the Gloo backend's thresholds first.
std::span<const TuningVariable> tuningVariables();

// The tuning the variables set in `env` give; ConfigError at the first one
// (in the table's order) whose value is not what it takes.
CommTuning readTuning(const Environment& env);

}  // namespace distrun::comm
