// How the Gloo backend fails: a Gloo exception or a shared-memory failure
// turned into the one error every rank throws, naming the lost peer (the
// first rank that could name it records it for the others) or the
// timeout, after waking and disconnecting every rank still waiting
// (docs/comm.md, "A peer that dies").
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/context.h>

#include <fmt/format.h>

#include "distrun/comm/gloo/gloo_communicator.h"
#include "distrun/common/error.h"

namespace distrun::comm {
namespace {

double seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

void GlooCommunicator::guarded(const char* op, const std::function<void()>& call) {
  noteAlgorithm("tcp");
  IdleSpinner::Scope awake(spinner_.get());
  try {
    call();
  } catch (const gloo::Exception& e) {
    handleFailure(op, e.what());
  } catch (const gloo::EnforceNotMet& e) {
    handleFailure(op, e.what());
  }
}

void GlooCommunicator::handleFailure(const char* op, const std::string& detail) {
  const bool timedOut = detail.find("Timed out") != std::string::npos ||
                        detail.find("timed out") != std::string::npos;
  std::optional<int> peer = peers_.findIn(detail);
  std::string mine = peer ? "lost " + peers_.describe(*peer) : "lost a peer";
  fail(op, timedOut, peer ? std::optional(mine) : std::nullopt,
       timedOut ? detail : mine + ": " + detail);
}

void GlooCommunicator::fail(const char* op, bool timedOut, const std::optional<std::string>& lost,
                            const std::string& seen) {
  // Ranks waiting here in shared memory fail now; then the record (the
  // first rank that could name a lost peer writes it, the others read it).
  if (shared_) shared_->abort();
  if (messages_) messages_->wakeAll();
  if (node_) node_->abort();
  std::optional<std::string> first;
  if (!timedOut) first = firstRecordedFailure(lost);
  // Close every connection so that ranks waiting on this one fail now
  // instead of at their timeout.
  mesh_->closeConnections();
  if (leaders_) leaders_->closeConnections();
  if (timedOut) {
    throw TimeoutError(
        fmt::format("{}: rank {} waited {} s for its peers (DISTRUN_COMM_TIMEOUT): {}", op, rank(),
                    seconds(options_.timeout), seen));
  }
  if (first) {
    throw CommunicationError(fmt::format("{}: {}; here on rank {}: {}", op, *first, rank(), seen));
  }
  throw CommunicationError(fmt::format("{}: {}", op, seen));
}

std::optional<std::string> GlooCommunicator::firstRecordedFailure(
    const std::optional<std::string>& mine) {
  failed_ = true;
  try {
    // Only a rank that could name the peer claims the record; the others
    // (whose neighbour merely closed on them) wait briefly for it.
    if (mine && store_->add(prefix_ + "/fault/count", 1) == 1) {
      store_->set(prefix_ + "/fault/first",
                  fmt::format("{} (seen first by rank {})", *mine, rank()));
      return std::nullopt;
    }
    return store_->get(prefix_ + "/fault/first", std::chrono::seconds(1));
  } catch (const Error&) {
    return std::nullopt;  // the store went with the peer: name what we saw
  }
}

void GlooCommunicator::guardedShared(const char* op, const std::function<void()>& call,
                                     const std::vector<int>& ranks) {
  IdleSpinner::Scope awake(spinner_.get());
  try {
    call();
  } catch (const SharedMemoryFailure& f) {
    if (ranks.empty()) failShared(op, f);
    failShared(op, SharedMemoryFailure(f.kind, ranks[static_cast<size_t>(f.peer)], f.what()));
  }
}

// As handleFailure, for a failure seen in shared memory.
void GlooCommunicator::failShared(const char* op, const SharedMemoryFailure& failure) {
  const std::string peer = peers_.describe(failure.peer);
  switch (failure.kind) {
    case SharedMemoryFailure::Kind::kTimedOut:
      fail(op, /*timedOut=*/true, std::nullopt,
           fmt::format("{} did not arrive at a shared-memory {}", peer, op));
    case SharedMemoryFailure::Kind::kPeerExited:
      fail(op, /*timedOut=*/false, "lost " + peer,
           fmt::format("lost {}: it exited or closed its communicator during a shared-memory {}",
                       peer, op));
    case SharedMemoryFailure::Kind::kMismatch:
    case SharedMemoryFailure::Kind::kUnreadable:
      fail(op, /*timedOut=*/false, std::nullopt, failure.what());
    case SharedMemoryFailure::Kind::kAborted:
      break;
  }
  fail(op, /*timedOut=*/false, std::nullopt,
       fmt::format("{} gave up on a shared-memory {}", peer, op));
}

}  // namespace distrun::comm
