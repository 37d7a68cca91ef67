#include "distrun/launch/failure_cause.h"

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

std::string lostPeerLine(const std::vector<std::string>& tail) {
  for (const std::string& line : tail) {
    for (std::string_view marker : lostPeerMarkers()) {
      if (line.find(marker) != std::string::npos) return line;
    }
  }
  return "";
}

bool isEcho(const WorkerFailure& f) {
  bool peerCode = f.signal == 0 && (f.exitCode == toInt(ExitCode::kPeerLost) ||
                                    f.exitCode == toInt(ExitCode::kRendezvous));
  return peerCode || !lostPeerLine(f.stderrTail).empty();
}

}  // namespace distrun::launch
