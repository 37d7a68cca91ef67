#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

// A connection to a StoreServer, authenticated with the job token.
// Not thread-safe: one client per thread. Every failure is a typed error
// naming the store's address: RendezvousError (refused token, lost
// connection, "the rendezvous store at HOST:PORT stopped serving: CAUSE"
// when the server failed), TimeoutError (no answer in time). The socket
// carries TCP keepalive (socket.h), so a store whose host died is a
// RendezvousError within seconds, also while a get() waits.
class StoreClient final : public Store {
 public:
  // Connects (retrying while the store is not up yet, until `connectTimeout`)
  // and presents `token`. Every key is then taken within `keySpace` (wire.h):
  // the job's run id, so that jobs sharing a store keep apart; "": the root.
  StoreClient(std::string host, int port, std::string token,
              std::chrono::milliseconds connectTimeout, std::string keySpace = {});
  ~StoreClient() override;
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  // Store's operations (store.h). A get or a batch whose timeout passed
  // makes the connection again (its late reply would be read as the next
  // one's).
  void set(const std::string& key, const std::string& value) override;
  std::optional<std::string> get(const std::string& key,
                                 std::chrono::milliseconds timeout) override;
  std::optional<std::string> tryGet(const std::string& key) override;
  long long add(const std::string& key, long long delta) override;
  std::string compareSet(const std::string& key, const std::string& expected,
                         const std::string& desired) override;
  // Sends `batch` in one write and reads one reply per request.
  std::vector<std::optional<std::string>> run(const StoreBatch& batch,
                                              std::chrono::milliseconds timeout) override;

  // Leaves this connection's last will with the store (wire.h, kWill): when
  // the connection closes without clearWill() or close() first (this
  // process died, its host went silent, or the client was destroyed), the
  // store appends `value` to the sequence counted by `counterKey`, at
  // `prefix` + index, as publishEvent does (launch/job_events.cc: counter
  // roundKey(k, "events"), prefix roundKey(k, "event/")). A later call
  // replaces the will. `counterKey` must not be empty. `closedValue`, when
  // not empty, is appended instead if this process died for sure (its
  // kernel closed the connection), where `value` is for a connection that
  // went silent (a host cut off may still live).
  // Hold a will on a connection whose get() never times out (or that makes
  // no get()): a get() whose time-out passes gives up the connection, so the
  // will fires, and get() then throws RendezvousError saying so.
  void setWill(const std::string& counterKey, const std::string& prefix, const std::string& value,
               const std::string& closedValue = {});
  // Withdraws the will; the connection stays.
  void clearWill();
  // A clean leave: withdraws the will, if one is set, and closes the
  // connection; any later call is a RendezvousError. Idempotent.
  void close();

  const std::string& address() const override { return address_; }

  // Makes a call blocked in another thread fail at once with
  // RendezvousError (shuts the socket down). The only method that may be
  // called from another thread.
  void interrupt();

 private:
  Frame request(const Frame& frame, std::optional<Clock::time_point> deadline);
  void send(const std::string& bytes);
  Frame readReply(Clock::time_point until);
  void forgetConnection();
  void connect(std::chrono::milliseconds timeout);

  std::string host_;
  int port_;
  std::string token_;
  std::string keySpace_;
  std::string address_;
  // Throws when the store refused the token or reported its failure.
  void checkReply(const Frame& reply);

  UniqueFd fd_;
  std::string in_;    // bytes read and not yet decoded start at inPos_
  size_t inPos_ = 0;  // (a batch's replies are decoded without copying)
  bool hasWill_ = false;
};

}  // namespace distrun::rdzv
