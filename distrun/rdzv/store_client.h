#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

// A connection to a StoreServer, authenticated with the job token.
// Not thread-safe: one client per thread. Every failure is a typed error
// naming the store's address: RendezvousError (refused token, lost
// connection, "the rendezvous store at HOST:PORT stopped serving: CAUSE"
// when the server failed), TimeoutError (no answer in time).
class StoreClient {
 public:
  // Connects (retrying while the store is not up yet, until `connectTimeout`)
  // and presents `token`.
  StoreClient(std::string host, int port, std::string token,
              std::chrono::milliseconds connectTimeout);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until `key` exists. nullopt when `timeout` passes first.
  std::optional<std::string> get(const std::string& key, std::chrono::milliseconds timeout);
  // The value if `key` exists now.
  std::optional<std::string> tryGet(const std::string& key);
  // Adds `delta` to the integer at `key` (0 when absent); returns the sum.
  long long add(const std::string& key, long long delta);

  const std::string& address() const { return address_; }

  // Makes a call blocked in another thread fail at once with
  // RendezvousError (shuts the socket down). The only method that may be
  // called from another thread.
  void interrupt();

 private:
  Frame request(const Frame& frame, std::optional<Clock::time_point> deadline);
  void connect(std::chrono::milliseconds timeout);

  std::string host_;
  int port_;
  std::string token_;
  std::string address_;
  // Throws when the store refused the token or reported its failure.
  void checkReply(const Frame& reply);

  UniqueFd fd_;
  std::string in_;
};

}  // namespace distrun::rdzv
