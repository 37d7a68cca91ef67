#pragma once

// What the rendezvous, the job's events, the doctor and the communicators
// ask of a store: the seam between them and StoreClient (a connection to a
// StoreServer, store_client.h), which unit tests fill with an InMemoryStore
// (in_memory_store.h). Wills, a clean close and interrupting a blocked call
// are the connection's own and stay StoreClient's.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace distrun::rdzv {

// Requests to send to the store together (wire.h): however many, a batch
// costs one round trip, and the store answers them in order. A get in a
// batch holds back the requests behind it until its key exists. Build one,
// then Store::run it. Not thread-safe.
class StoreBatch {
 public:
  StoreBatch& set(const std::string& key, const std::string& value);
  StoreBatch& get(const std::string& key);
  StoreBatch& tryGet(const std::string& key);
  StoreBatch& add(const std::string& key, long long delta);
  size_t size() const { return count_; }
  // The requests as the wire carries them, one frame each (wire.h).
  const std::string& frames() const { return bytes_; }

 private:
  std::string bytes_;  // the encoded frames
  size_t count_ = 0;
};

// Every failure is a typed error naming the store's address():
// RendezvousError (the store is lost or refused this process), TimeoutError
// (no answer in time).
class Store {
 public:
  virtual ~Store() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` exists. nullopt when `timeout` passes first.
  virtual std::optional<std::string> get(const std::string& key,
                                         std::chrono::milliseconds timeout) = 0;
  // The value if `key` exists now.
  virtual std::optional<std::string> tryGet(const std::string& key) = 0;
  // Adds `delta` to the integer at `key` (0 when absent); returns the sum.
  virtual long long add(const std::string& key, long long delta) = 0;
  // Sets `desired` when `key` holds `expected` (an absent key holds "");
  // returns the value held afterwards, so the caller won iff it is
  // `desired` and differs from what was there.
  virtual std::string compareSet(const std::string& key, const std::string& expected,
                                 const std::string& desired) = 0;
  // Runs `batch`'s requests in order and returns one reply per request: the
  // value for get and tryGet (nullopt: missing), the total for add, "" for
  // set. Fewer replies than requests when `timeout` passed first (the
  // requests answered were applied; the others may or may not have been).
  // milliseconds::max(): no deadline.
  virtual std::vector<std::optional<std::string>> run(const StoreBatch& batch,
                                                      std::chrono::milliseconds timeout) = 0;
  // Where the store is, in an error message ("HOST:PORT").
  virtual const std::string& address() const = 0;
};

}  // namespace distrun::rdzv
