#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/store_server.h"

namespace distrun::rdzv {

// Store succession (docs/launcher.md, "Store succession"): when the agent
// that hosts the rendezvous store dies, the surviving agents agree on a new
// store without a vote and without user action. Every agent binds a standby
// listening socket when it starts (StandbyStore) and publishes its address
// through the first store; every agent then holds the same ordered list of
// candidates. When the store is lost, each survivor walks the list with
// findOrBecomeStore: the first candidate that answers is the store; an agent
// that reaches itself first serves.
//
// Why two live agents that hold the same list never both serve. An agent
// serves only on reaching its own index, after every candidate before it was
// (a) the lost store's address, skipped by every walker alike, or (b) dead:
// the connect was refused (no process holds the address), went unanswered
// until the per-candidate time-out (no host answers), or the connection
// broke (reset when the process died; keepalive time-out when its host did).
// A candidate that accepted the connection but has not answered the hello
// (its agent is alive and still walking) is never skipped: the walker waits
// for its answer until the walk's own time-out, and then fails with
// TimeoutError instead of going on. Now let live agents A < B both serve.
// B's walk reached A (A is not the lost address, or A would have skipped
// itself too). A's standby socket was bound before the list existed and
// stays bound while A lives (an agent keeps its StandbyStore for its whole
// life), so B's connect succeeds into its backlog and the connection lasts;
// B waits; A serves on that very socket and answers B's hello; B takes A as
// the store and does not serve: a contradiction. So every walker also takes
// the same store: only a serving candidate answers kOk, and at most one
// serves. Also, the walk never serves twice: serve() takes the standby
// socket once.
// A candidate that answers anything but this job's kOk (another job's token,
// bytes that are not the protocol: another program took a dead agent's
// port) ends the walk with RendezvousError instead of being guessed dead;
// one whose server failed (kFailed) is dead, as its closed socket will be.
//
// What breaks it, and so what it does not survive:
// - a network partition: if B cannot reach A (a cut link, a firewall, a
//   full accept queue dropping SYNs for longer than the per-candidate
//   time-out), B takes the live A for a dead host and both may serve
//   (the round's fencing then lets only one side train: elastic_plan.h,
//   fencedBy);
// - an old store that is not dead but unreachable from some agents: those
//   walk and elect a new store while the others keep using the old one;
//   walk only after the store's connection broke (EOF, reset, keepalive
//   time-out), never on a slow answer;
// - agents that disagree on the lost address or hold different lists (the
//   launcher takes both from the same round);
// - a candidate that is alive but never walks (its agent hung or stopped):
//   the others wait for it, then fail with TimeoutError (the job ends; it
//   does not split);
// - the store's state: the new store starts empty; the agents must
//   re-publish what they need (a new rendezvous round).
//
// Time: a dead process costs nothing (refused at once), a dead host the
// per-candidate time-out, a live candidate's own walk what it costs it.
// Thread-safety: StandbyStore is not thread-safe; findOrBecomeStore calls
// on different StandbyStores may run at once (tests do, as agents).

// An agent's standby store address, as the other agents reach it.
struct StoreCandidate {
  std::string host;
  int port = 0;
  std::string name = {};  // its node's name (not part of its identity as an address)
};

inline bool operator==(const StoreCandidate& a, const StoreCandidate& b) {
  return a.host == b.host && a.port == b.port;
}

// How long a walk waits for a candidate whose host does not answer the
// connect (SYN retries go at 1 s and 3 s; a dead host's connect is only
// ever answered by this time-out).
inline constexpr std::chrono::milliseconds kCandidateConnectTimeout{5000};
// How long a whole walk may take, waiting for a live candidate to serve.
inline constexpr std::chrono::milliseconds kSuccessionTimeout{120000};

// An agent's reserved store address: a socket bound to `bindHost`, any free
// port, and listening, which nothing accepts on until serve(). While the
// agent's process lives a connect to it succeeds (into the backlog); once
// the process died it is refused. Owns the socket until serve() hands it to
// the StoreServer.
class StandbyStore {
 public:
  // Binds and listens. `bindHost`: socket.h's storeBindAddress of the host
  // the other agents are told. Throws SystemError naming the address.
  explicit StandbyStore(const std::string& bindHost);

  int port() const { return port_; }
  bool serving() const { return !socket_; }
  // Starts the store on the reserved socket, connections already waiting in
  // its backlog included. Once only: EnforceError the second time.
  std::unique_ptr<StoreServer> serve(std::string token, StoreLimits limits = {});

 private:
  std::string host_;
  UniqueFd socket_;
  int port_ = 0;
};

struct SuccessionOptions {
  std::chrono::milliseconds connectTimeout = kCandidateConnectTimeout;  // per candidate
  std::chrono::milliseconds timeout = kSuccessionTimeout;               // the whole walk
  StoreLimits limits;  // of the store this agent may serve
};

// Where the store is after a walk, and the server when this agent hosts it.
struct StoreLocation {
  StoreCandidate address;
  std::unique_ptr<StoreServer> server;  // empty unless this agent serves
  // The candidates the walk found gone for sure: their standby refused the
  // connect (their process died; a host cut off never refuses).
  std::vector<StoreCandidate> gone;
};

// Walks `candidates` in order (above) for this agent, `candidates[selfIndex]`
// whose standby socket is `standby`, after the store at `lost` was lost.
// Throws TimeoutError (exit 75) when a live candidate did not serve within
// options.timeout, RendezvousError (exit 76) when a candidate refused the
// token or answered with something else, or none is left (this agent is the
// lost store and every other candidate is dead), ConfigError when a
// candidate's host does not resolve,
// EnforceError when selfIndex is out of range or `standby` already serves.
StoreLocation findOrBecomeStore(const std::vector<StoreCandidate>& candidates, size_t selfIndex,
                                StandbyStore& standby, const std::string& token,
                                const StoreCandidate& lost, const SuccessionOptions& options = {});

}  // namespace distrun::rdzv
