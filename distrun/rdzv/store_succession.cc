#include "distrun/rdzv/store_succession.h"

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

StandbyStore::StandbyStore(const std::string& bindHost) : host_(bindHost) {
  socket_.reset(listenTcp(bindHost, 0, &port_));
}

std::unique_ptr<StoreServer> StandbyStore::serve(std::string token, StoreLimits limits) {
  DISTRUN_ENFORCE(socket_.valid(), "the standby store at port ", port_, " serves already");
  return std::make_unique<StoreServer>(std::move(socket_), host_, std::move(token), nullptr,
                                       limits);
}

namespace {

std::string addressOf(const StoreCandidate& c) { return fmt::format("{}:{}", c.host, c.port); }

// What a walk learnt of one candidate: it serves, its process is gone for
// sure (refused), or it is dead as far as the walk can tell (its host
// silent: a partition's far side looks the same).
enum class Answer { kServes, kGone, kDead };

// One walk: its list, its deadline, and what it needs to tell.
struct Walk {
  const std::vector<StoreCandidate>& candidates;
  const std::string& token;
  const StoreCandidate& lost;
  const SuccessionOptions& options;
  Clock::time_point deadline;
};

[[noreturn]] void throwWalkTimedOut(const Walk& walk, size_t index) {
  throw TimeoutError(fmt::format(
      "store succession: candidate {} ({}) is alive but did not serve the rendezvous store "
      "within {} s of the loss of {}; this agent serves none itself, since two stores would "
      "split the job",
      index, addressOf(walk.candidates[index]),
      std::chrono::duration<double>(walk.options.timeout).count(), addressOf(walk.lost)));
}

// Reads the answer to the hello. A connection that breaks is a candidate
// that died (reset) or whose host went silent (keepalive): dead.
Answer awaitHello(const Walk& walk, size_t index, int fd) {
  const std::string where = addressOf(walk.candidates[index]);
  std::string in;
  while (true) {
    Frame reply;
    size_t used = 0;
    const DecodeStatus status = decodeFrame(in, reply, used);
    if (status == DecodeStatus::kFrame && reply.op == Op::kOk) return Answer::kServes;
    if (status == DecodeStatus::kFrame && reply.op == Op::kFailed) return Answer::kDead;
    if (status == DecodeStatus::kFrame && reply.op == Op::kRefused) {
      throw RendezvousError(fmt::format(
          "store succession: candidate {} ({}) refused this agent's token: every agent of a "
          "job needs the same DISTRUN_TOKEN",
          index, where));
    }
    if (status != DecodeStatus::kNeedMore) {
      throw RendezvousError(fmt::format(
          "store succession: candidate {} ({}) answered the hello with something that is not "
          "the store's protocol",
          index, where));
    }
    try {
      if (!readSome(fd, in, walk.deadline, where)) throwWalkTimedOut(walk, index);
    } catch (const RendezvousError&) {
      return Answer::kDead;
    }
  }
}

// Asks candidate `index` whether it serves, waiting while it is alive.
Answer ask(const Walk& walk, size_t index) {
  const StoreCandidate& c = walk.candidates[index];
  const auto connectBy = std::min(Clock::now() + walk.options.connectTimeout, walk.deadline);
  ConnectAttempt attempt = tryConnectTcp(c.host, c.port, connectBy);
  if (!attempt.fd) {
    // Refused, unreachable, or unanswered for the whole per-candidate time:
    // no live agent there. Cut short by the walk's deadline: not known.
    if (Clock::now() >= walk.deadline) throwWalkTimedOut(walk, index);
    return attempt.error == ECONNREFUSED ? Answer::kGone : Answer::kDead;
  }
  const std::string where = addressOf(c);
  setKeepAlive(attempt.fd.get(), where);
  std::string hello;
  encodeFrame(Frame{Op::kHello, {walk.token}}, hello);
  try {
    writeAll(attempt.fd.get(), hello, where);
  } catch (const RendezvousError&) {
    return Answer::kDead;
  }
  return awaitHello(walk, index, attempt.fd.get());
}

}  // namespace

StoreLocation findOrBecomeStore(const std::vector<StoreCandidate>& candidates, size_t selfIndex,
                                StandbyStore& standby, const std::string& token,
                                const StoreCandidate& lost, const SuccessionOptions& options) {
  DISTRUN_ENFORCE_LT(selfIndex, candidates.size(), "this agent is not among the candidates");
  const Walk walk{candidates, token, lost, options, Clock::now() + options.timeout};
  std::vector<StoreCandidate> gone;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] == lost) continue;
    if (i == selfIndex) return {candidates[i], standby.serve(token, options.limits), gone};
    const Answer answer = ask(walk, i);
    if (answer == Answer::kServes) return {candidates[i], nullptr, gone};
    if (answer == Answer::kGone) gone.push_back(candidates[i]);
  }
  throw RendezvousError(fmt::format(
      "store succession: no candidate serves the rendezvous store after the loss of {}: this "
      "agent hosted it, and the other {} candidate(s) are gone",
      addressOf(lost), candidates.size() - 1));
}

}  // namespace distrun::rdzv
