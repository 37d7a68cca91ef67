#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/wire.h"

struct epoll_event;

namespace distrun::rdzv {

// epoll_wait(2) as the store server calls it: its seam, so that a test can
// make the loop fail (as a real epoll_wait failing would).
using EpollWait =
    std::function<int(int epollFd, epoll_event* events, int maxEvents, int timeoutMs)>;

// The store's limits (docs/security.md, "The store's limits"): what a
// stranger without the token can make it hold, and how big a request of a
// client with the token may be. Each connection is "pending" from its
// accept until its hello is accepted.
inline constexpr size_t kMaxPendingConnections = 8192;  // then the oldest pending is closed
inline constexpr size_t kMaxConnections = 65536;        // then a new connection is closed
inline constexpr std::chrono::milliseconds kHelloTimeout{10000};  // to send the hello
inline constexpr uint32_t kMaxHelloBody = 4096;  // bytes a pending connection may send
inline constexpr size_t kMaxKeyBytes = 4096;     // a value is bounded by kMaxFrameBody

struct StoreLimits {
  size_t maxPending = kMaxPendingConnections;
  size_t maxConnections = kMaxConnections;
  std::chrono::milliseconds helloTimeout = kHelloTimeout;
  size_t maxKeyBytes = kMaxKeyBytes;
};

// The rendezvous store: a key-value server that node 0's agent hosts and
// every agent joins with the job token. One thread runs one epoll loop over
// every connection (no thread per connection). Values are never deleted.
// Protocol: wire.h. A connection that sends a wrong token, or bytes that are
// not a frame, is closed; the server keeps serving the others. A client's
// last will (kWill) is carried out when its connection closes, for any
// reason, while the store serves. Accepted sockets carry TCP keepalive
// (socket.h's setKeepAlive), so a client whose host died is closed, and its
// will carried out, within seconds.
//
// Every system call is checked. One connection's failure (a read or send
// error, a peer gone) closes that connection. A failure of the loop itself
// (epoll_wait, epoll_ctl, accept4 out of descriptors, ...) stops the store:
// each authenticated client is sent a kFailed frame with the cause, and
// every connection and the listening socket are closed, so that clients
// fail at once with "the rendezvous store at HOST:PORT stopped serving:
// CAUSE" (RendezvousError) instead of waiting out their time-outs; the
// owner's check() rethrows the error (SystemError naming the call and this
// store's address).
//
// Thread-safety: construct, port(), check() and stop() from one thread;
// the loop runs on its own thread from construction until stop(),
// destruction or its failure.
class StoreServer {
 public:
  // Binds `host`:`port` (port 0: any free port) and starts serving. Throws
  // SystemError naming the address when the socket cannot be bound.
  // `epollWait` replaces ::epoll_wait (tests); empty: the real one.
  // `limits`: the defaults above, smaller in tests.
  StoreServer(const std::string& host, int port, std::string token, EpollWait epollWait = nullptr,
              StoreLimits limits = {});
  // Serves on `listening`, a socket already bound to `host` and listening,
  // non-blocking and close-on-exec (listenTcp's; StandbyStore's), which it
  // takes over: connections waiting in its backlog are served. `host` names
  // the store in errors. Throws SystemError.
  StoreServer(UniqueFd listening, const std::string& host, std::string token,
              EpollWait epollWait = nullptr, StoreLimits limits = {});
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  // Stops the loop and closes every connection. Idempotent; never throws
  // (a failure of the loop is for check()).
  void stop();
  // Rethrows the error that stopped the loop, if one did.
  void check() const;

  // Connections closed for a wrong token, malformed bytes, a key too long,
  // no hello in time, or over a limit, since start.
  size_t rejectedConnections() const { return rejected_.load(); }

 private:
  struct Connection;
  void loop();
  void serve();
  bool dispatch(const epoll_event& event);
  void abandon(std::exception_ptr error, const std::string& cause);
  void watch(int fd, int op, uint32_t events);
  void accept();
  void onReadable(Connection& c);
  void onWritable(Connection& c);
  void processFrames(Connection& c);
  bool handle(Connection& c, Frame& frame);
  bool greet(Connection& c, const Frame& hello);
  void compareSet(Connection& c, const std::string& key, const std::string& expected,
                  std::string& desired);
  void reply(Connection& c, const Frame& frame);
  void wake(const std::string& key, const std::string& value);
  void storeSet(const std::string& key, const std::string& value);
  std::optional<long long> storeAdd(const std::string& key, const std::string& delta);
  bool leaveWill(Connection& c, Frame& frame);
  struct Will;
  void carryOut(const Will& will, bool closedByPeer);
  void disconnect(int fd, bool rejected);
  void updateInterest(Connection& c);
  int msUntilNextHelloDeadline() const;
  void closeLateHellos();
  bool closeOldestPending();
  bool isPending(int fd, uint64_t serial) const;
  struct PendingEntry {
    std::chrono::steady_clock::time_point deadline;
    int fd;
    uint64_t serial;
  };
  bool closeUnlessHelloArrived(const PendingEntry& entry);

  std::string token_;
  EpollWait epollWait_;
  StoreLimits limits_;
  UniqueFd listenFd_;
  UniqueFd epollFd_;
  UniqueFd stopFd_;
  int port_ = 0;
  std::string where_;  // "rendezvous store at HOST:PORT", for errors
  std::atomic<size_t> rejected_{0};
  mutable std::mutex failureMutex_;
  std::exception_ptr failure_;  // why the loop stopped, if it failed
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::vector<int>> waiters_;
  // Pending connections in accept order: (hello deadline, fd, serial). An
  // entry whose connection is gone or authenticated is skipped.
  std::deque<PendingEntry> pending_;
  size_t pendingCount_ = 0;
  uint64_t nextSerial_ = 0;
  std::thread thread_;
};

}  // namespace distrun::rdzv
