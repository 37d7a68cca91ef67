#include "distrun/comm/tuning.h"

#include <cstdint>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::comm {

namespace {

// A size threshold in bytes, up to 1 TiB. `field` is a size_t of
// GlooOptions or of the SharedMemoryOptions it inherits.
template <auto field>
void bytes(const char* name, const std::string& text, CommTuning& tuning) {
  tuning.gloo.*field = static_cast<size_t>(parseCount(text, name, int64_t{1} << 40));
}

// 1 turns it on, 0 off.
template <auto field>
void onOff(const char* name, const std::string& text, CommTuning& tuning) {
  tuning.gloo.*field = parseCount(text, name, 1) == 1;
}

void seconds(const char* name, const std::string& text, CommTuning& tuning) {
  tuning.timeout = std::chrono::seconds(parseCount(text, name, 86400 * 7));
}

void spin(const char* name, const std::string& text, CommTuning& tuning) {
  using Spin = GlooOptions::Spin;
  if (text == "auto") {
    tuning.gloo.spinWhileWaiting = Spin::kWhereNoOtherNodeSharesTheMachine;
  } else if (text == "1") {
    tuning.gloo.spinWhileWaiting = Spin::kAlways;
  } else if (text == "0") {
    tuning.gloo.spinWhileWaiting = Spin::kNever;
  } else {
    throw ConfigError(fmt::format("{}='{}' is not one of: 1, 0, auto", name, text));
  }
}

void instructions(const char* name, const std::string& text, CommTuning& tuning) {
  if (text == "auto") {
    tuning.instructions.reset();
    return;
  }
  tuning.instructions = instructionsNamed(text);
  if (!tuning.instructions) {
    throw ConfigError(
        fmt::format("{}='{}' is not one of: auto, baseline, avx2, avx512", name, text));
  }
}

void mpiThreads(const char* name, const std::string& text, CommTuning& tuning) {
  if (text == "serialized") {
    tuning.mpiThreads = MpiThreads::kSerialized;
  } else if (text == "funneled") {
    tuning.mpiThreads = MpiThreads::kFunneled;
  } else if (text == "single") {
    tuning.mpiThreads = MpiThreads::kSingle;
  } else {
    throw ConfigError(
        fmt::format("{}='{}' is not one of: serialized, funneled, single", name, text));
  }
}

using G = GlooOptions;

constexpr TuningVariable kVariables[] = {
    {"DISTRUN_GLOO_BCUBE_BELOW", "bytes", bytes<&G::bcubeBelowBytes>},
    {"DISTRUN_GLOO_GATHER_BELOW", "bytes", bytes<&G::gatherBelowBytes>},
    {"DISTRUN_GLOO_HIERARCHICAL_ALLGATHER_BELOW", "bytes",
     bytes<&G::hierarchicalAllgatherBelowBytes>},
    {"DISTRUN_GLOO_HIERARCHICAL_ALLTOALL_BELOW", "bytes",
     bytes<&G::hierarchicalAlltoallBelowBytes>},
    {"DISTRUN_COMM_SHM", "0 or 1", onOff<&G::sharedMemory>},
    {"DISTRUN_COMM_SHM_DIRECT_FROM", "bytes", bytes<&G::sharedDirectFromBytes>},
    {"DISTRUN_COMM_SHM_ALLREDUCE_SHARES_FROM", "bytes", bytes<&G::sharedAllreduceSharesFromBytes>},
    {"DISTRUN_COMM_SHM_STREAMING_FROM", "bytes", bytes<&G::sharedStreamingFromBytes>},
    {"DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_FROM", "bytes", bytes<&G::sharedDirectAllreduceFromBytes>},
    {"DISTRUN_COMM_SHM_DIRECT_ALLREDUCE_BELOW", "bytes",
     bytes<&G::sharedDirectAllreduceBelowBytes>},
    {"DISTRUN_COMM_SHM_ALLREDUCE_CHOICE_FROM", "bytes", bytes<&G::sharedAllreduceChoiceFromBytes>},
    {"DISTRUN_COMM_SHM_ALLGATHER_CHOICE_FROM", "bytes", bytes<&G::sharedAllgatherChoiceFromBytes>},
    {"DISTRUN_COMM_SHM_DIRECT_BROADCAST_FROM", "bytes", bytes<&G::sharedDirectBroadcastFromBytes>},
    {"DISTRUN_COMM_SHM_DIRECT_BROADCAST_BELOW", "bytes",
     bytes<&G::sharedDirectBroadcastBelowBytes>},
    {"DISTRUN_COMM_SHM_BUFFERS", "0 or 1", onOff<&G::sharedBuffers>},
    {"DISTRUN_COMM_SPIN", "1, 0 or auto", spin},
    {"DISTRUN_COMM_TIMEOUT", "seconds", seconds},
    {"DISTRUN_COMM_SIMD", "auto, baseline, avx2 or avx512", instructions},
    {"DISTRUN_COMM_MPI_THREADS", "serialized, funneled or single", mpiThreads},
};

}  // namespace

std::span<const TuningVariable> tuningVariables() { return kVariables; }

CommTuning readTuning(const Environment& env) {
  CommTuning tuning;
  for (const TuningVariable& variable : kVariables) {
    if (const std::optional<std::string> text = env.get(variable.name)) {
      variable.read(variable.name, *text, tuning);
    }
  }
  return tuning;
}

}  // namespace distrun::comm
