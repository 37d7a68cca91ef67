#include "distrun/rdzv/in_memory_store.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string_view>
#include <utility>

#include "distrun/common/error.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

InMemoryStore::InMemoryStore(std::string address) : address_(std::move(address)) {}

void InMemoryStore::setLocked(const std::string& key, const std::string& value) {
  values_[key] = value;
  changed_.notify_all();
}

void InMemoryStore::set(const std::string& key, const std::string& value) {
  std::lock_guard lock(mutex_);
  setLocked(key, value);
}

std::optional<std::string> InMemoryStore::waitFor(const std::string& key,
                                                  Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const auto present = [&] { return values_.contains(key); };
  if (deadline == Clock::time_point::max()) {
    changed_.wait(lock, present);
  } else if (!changed_.wait_until(lock, deadline, present)) {
    return std::nullopt;
  }
  return values_.at(key);
}

std::optional<std::string> InMemoryStore::get(const std::string& key,
                                              std::chrono::milliseconds timeout) {
  return waitFor(key, deadlineAfter(timeout));
}

std::optional<std::string> InMemoryStore::tryGet(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

long long InMemoryStore::add(const std::string& key, long long delta) {
  std::lock_guard lock(mutex_);
  long long current = 0;
  if (auto it = values_.find(key); it != values_.end()) {
    try {
      size_t used = 0;
      current = std::stoll(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument(it->second);
    } catch (const std::logic_error&) {
      throw RendezvousError(fmt::format("the store at {}: '{}' holds '{}', not a number to add to",
                                        address_, key, it->second));
    }
  }
  long long total = 0;
  if (__builtin_add_overflow(current, delta, &total)) {
    throw RendezvousError(
        fmt::format("the store at {}: adding {} to '{}' overflows", address_, delta, key));
  }
  setLocked(key, std::to_string(total));
  return total;
}

std::string InMemoryStore::compareSet(const std::string& key, const std::string& expected,
                                      const std::string& desired) {
  std::lock_guard lock(mutex_);
  auto it = values_.find(key);
  const std::string current = it == values_.end() ? "" : it->second;
  if (current != expected) return current;
  setLocked(key, desired);
  return desired;
}

std::vector<std::optional<std::string>> InMemoryStore::run(const StoreBatch& batch,
                                                           std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = deadlineAfter(timeout);
  std::vector<std::optional<std::string>> replies;
  std::string_view rest = batch.frames();
  Frame frame;
  size_t used = 0;
  while (decodeFrame(rest, frame, used) == DecodeStatus::kFrame) {
    rest.remove_prefix(used);
    const std::string& key = frame.fields.at(0);
    switch (frame.op) {
      case Op::kSet:
        set(key, frame.fields.at(1));
        replies.emplace_back("");
        break;
      case Op::kGet:
        replies.push_back(waitFor(key, deadline));
        if (!replies.back()) {  // its time passed: fewer replies than requests
          replies.pop_back();
          return replies;
        }
        break;
      case Op::kTryGet:
        replies.push_back(tryGet(key));
        break;
      case Op::kAdd:
        replies.emplace_back(std::to_string(add(key, std::stoll(frame.fields.at(1)))));
        break;
      default:
        throw std::logic_error("a StoreBatch made a request other than set, get, tryGet, add");
    }
  }
  return replies;
}

}  // namespace distrun::rdzv
