#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "distrun/rdzv/store.h"

namespace distrun::comm {

// Who the peers of a Gloo communicator are, so that a transport error that
// names a socket address ("[10.0.0.7]:41012") can name the rank, host and
// pid behind it. Each rank publishes its host, pid and the local address of
// every TCP socket it has open once Gloo has connected (listening and
// connecting ends alike: Gloo names whichever end the peer's socket is),
// and the listening address it advertised for each pair (a pair that was
// accepted before Gloo read its peer's address names that advertised
// address, a socket long closed); every rank reads them all once.
class PeerDirectory {
 public:
  struct Peer {
    std::string host;
    long pid = 0;
    std::vector<std::string> addresses;  // "[ip]:port" of each socket
  };

  // This process's open TCP sockets' local addresses (getsockname of each
  // descriptor), each also with its port bytes swapped (as Gloo 0.5 prints
  // ports).
  static std::vector<std::string> localSocketAddresses();
  // The addresses in the blob Gloo's connectFullMesh publishes for one rank
  // (`pairs` tcp::Address records, one per peer), as Gloo prints them;
  // empty when the blob is not that shape.
  static std::vector<std::string> advertisedAddresses(const std::vector<char>& blob, int pairs);

  // Publishes this rank's entry under `prefix`/peer/RANK.
  static void publish(rdzv::Store& store, const std::string& prefix, int rank, const Peer& self);
  // Reads every rank's entry (waiting up to `timeout` for each).
  void load(rdzv::Store& store, const std::string& prefix, int rank, int size,
            std::chrono::milliseconds timeout);

  // The rank whose socket address appears in `message`, if any.
  std::optional<int> findIn(const std::string& message) const;
  // The ranks that published `host` as their host name, in order.
  std::vector<int> ranksOnHost(const std::string& host) const;
  // "rank 2 (host node7, pid 4711)".
  std::string describe(int rank) const;

  static std::string encode(const Peer& peer);
  static Peer decode(const std::string& text);

 private:
  std::vector<Peer> peers_;
  std::map<std::string, int> byAddress_;  // socket address -> its rank
};

}  // namespace distrun::comm
