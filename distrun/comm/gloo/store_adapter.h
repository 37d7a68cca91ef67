#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "distrun/rdzv/store.h"

namespace distrun::comm {

// Gloo's rendezvous store interface over distrun's store (distrun/rdzv):
// every key is put under `prefix`. A key that does not appear within
// `timeout` throws TimeoutError naming it. Remembers what this process
// wrote, so that the communicator can read back what Gloo advertised.
// Used from one thread.
class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(rdzv::Store& client, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // The value this process set under `key`, or nullptr.
  const std::vector<char>* written(const std::string& key) const;

 private:
  std::string fetch(const std::string& key, std::chrono::milliseconds timeout);

  rdzv::Store& client_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, std::vector<char>> written_;
};

}  // namespace distrun::comm
