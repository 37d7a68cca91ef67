#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

// The rendezvous store: a key-value server that node 0's agent hosts and
// every agent joins with the job token. One thread runs one epoll loop over
// every connection (no thread per connection). Values are never deleted.
// Protocol: wire.h. A connection that sends a wrong token, or bytes that are
// not a frame, is closed; the server keeps serving the others.
//
// Thread-safety: construct, port() and stop() from one thread; the loop
// runs on its own thread from construction until stop() or destruction.
class StoreServer {
 public:
  // Binds `host`:`port` (port 0: any free port) and starts serving. Throws
  // SystemError naming the address when the socket cannot be bound.
  StoreServer(const std::string& host, int port, std::string token);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  // Stops the loop and closes every connection. Idempotent.
  void stop();

  // Connections closed for a wrong token or malformed bytes, since start.
  size_t rejectedConnections() const { return rejected_.load(); }

 private:
  struct Connection;
  void loop();
  void accept();
  void onReadable(Connection& c);
  void onWritable(Connection& c);
  void processFrames(Connection& c);
  bool handle(Connection& c, Frame& frame);
  void reply(Connection& c, const Frame& frame);
  void wake(const std::string& key, const std::string& value);
  void close(int fd, bool rejected);
  void updateInterest(Connection& c);

  std::string token_;
  int listenFd_ = -1;
  int epollFd_ = -1;
  int stopFd_ = -1;
  int port_ = 0;
  std::atomic<size_t> rejected_{0};
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, std::string> values_;
  std::unordered_map<std::string, std::vector<int>> waiters_;
  std::thread thread_;
};

}  // namespace distrun::rdzv
