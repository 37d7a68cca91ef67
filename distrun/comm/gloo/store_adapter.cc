#include "distrun/comm/gloo/store_adapter.h"

#include <fmt/format.h>

#include "distrun/common/error.h"

namespace distrun::comm {

GlooStoreAdapter::GlooStoreAdapter(rdzv::Store& client, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : client_(client), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  client_.set(prefix_ + key, std::string(data.begin(), data.end()));
  written_[key] = data;
}

const std::vector<char>* GlooStoreAdapter::written(const std::string& key) const {
  auto found = written_.find(key);
  return found == written_.end() ? nullptr : &found->second;
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  std::string value = fetch(key, timeout_);
  return std::vector<char>(value.begin(), value.end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  for (const std::string& key : keys) fetch(key, timeout);
}

std::string GlooStoreAdapter::fetch(const std::string& key, std::chrono::milliseconds timeout) {
  std::optional<std::string> value = client_.get(prefix_ + key, timeout);
  if (!value) {
    throw TimeoutError(
        fmt::format("communicator: the other ranks did not publish '{}' within {} s on "
                    "the store at {} (a rank is missing or started with another "
                    "WORLD_SIZE)",
                    key, std::chrono::duration<double>(timeout).count(), client_.address()));
  }
  return *value;
}

}  // namespace distrun::comm
