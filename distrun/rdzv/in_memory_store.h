#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "distrun/rdzv/store.h"

namespace distrun::rdzv {

// A store in this process's memory, for unit tests of what takes a Store:
// every operation with a StoreServer's meaning, no socket, no thread of its
// own. The threads of a test share one (each of them a rank or a node).
// Thread-safe.
class InMemoryStore final : public Store {
 public:
  explicit InMemoryStore(std::string address = "memory");

  void set(const std::string& key, const std::string& value) override;
  std::optional<std::string> get(const std::string& key,
                                 std::chrono::milliseconds timeout) override;
  std::optional<std::string> tryGet(const std::string& key) override;
  // RendezvousError when the value is not a number or the sum would
  // overflow (a StoreServer drops such a connection).
  long long add(const std::string& key, long long delta) override;
  std::string compareSet(const std::string& key, const std::string& expected,
                         const std::string& desired) override;
  std::vector<std::optional<std::string>> run(const StoreBatch& batch,
                                              std::chrono::milliseconds timeout) override;
  const std::string& address() const override { return address_; }

 private:
  using Clock = std::chrono::steady_clock;
  std::optional<std::string> waitFor(const std::string& key, Clock::time_point deadline);
  void setLocked(const std::string& key, const std::string& value);

  std::string address_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::string, std::string> values_;
};

}  // namespace distrun::rdzv
