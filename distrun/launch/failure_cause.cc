#include "distrun/launch/failure_cause.h"

#include <cctype>
#include <string>

#include "distrun/common/error.h"
#include "distrun/common/exit_code.h"

namespace distrun::launch {

const std::vector<std::string_view>& lostPeerMarkers() {
  static const std::vector<std::string_view> markers = {
      // Gloo (gloo/transport/tcp/pair.cc): EOF on a pair, and its read
      // error when the peer's kernel reset the connection.
      "Connection closed by peer",
      "Connection reset by peer",
      // NCCL through PyTorch (ncclRemoteError).
      "remote process exited or there was a network error",
      // torch.distributed's TCPStore when the rank hosting it is gone.
      "Connection was likely closed",
      // distrun's communicator: "allreduce: lost rank 3 (host node2, pid 4711): ...".
      "lost rank ",
  };
  return markers;
}

namespace {

// "distrun: error: rank 0: ..." (distrun/train/trainer.cc relays rank 0's
// error so on every other rank).
bool relaysAnotherRank(std::string_view line) {
  static const std::string kRelay = std::string(kErrorPrefix) + "rank ";
  const size_t at = line.find(kRelay);
  if (at == std::string_view::npos) return false;
  const size_t end = at + kRelay.size();
  size_t digits = end;
  while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  return digits > end && line.substr(digits, 2) == ": ";
}

bool showsALostPeer(std::string_view line) {
  for (std::string_view marker : lostPeerMarkers()) {
    if (line.find(marker) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

bool raised(const WorkerFailure& f) {
  return f.errorTimestamp > 0 || f.errorWrittenMs > 0 || !f.errorMessage.empty();
}

bool raisedBefore(const WorkerFailure& failure, const WorkerFailure& than) {
  if (!raised(failure)) return false;
  if (!raised(than)) {
    return failure.errorWrittenMs > 0 && than.exitedMs > 0 &&
           failure.errorWrittenMs < than.exitedMs;
  }
  if (failure.errorWrittenMs > 0 && than.errorWrittenMs > 0) {
    return failure.errorWrittenMs < than.errorWrittenMs;
  }
  return failure.errorTimestamp > 0 && than.errorTimestamp > 0 &&
         failure.errorTimestamp < than.errorTimestamp;
}

std::string echoLine(const std::vector<std::string>& tail) {
  for (const std::string& line : tail) {
    if (showsALostPeer(line) || relaysAnotherRank(line)) return line;
  }
  return "";
}

bool isEcho(const WorkerFailure& f) {
  bool peerCode = f.signal == 0 && (f.exitCode == toInt(ExitCode::kPeerLost) ||
                                    f.exitCode == toInt(ExitCode::kRendezvous));
  return peerCode || f.afterRaiseOf >= 0 || !echoLine(f.stderrTail).empty();
}

}  // namespace distrun::launch
