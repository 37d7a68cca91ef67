#include "fuzz/store_harness.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>

#include "distrun/common/unique_fd.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"
#include "distrun/rdzv/wire.h"
#include "fuzz/fuzz_support.h"

namespace distrun::fuzz {

namespace {

constexpr auto kPatience = std::chrono::seconds(5);

rdzv::StoreServer& store() {
  // Never destroyed: the loop's thread serves every input of the process.
  static auto* server = new rdzv::StoreServer("127.0.0.1", 0, std::string(kStoreToken));
  return *server;
}

UniqueFd connectToStore() {
  auto deadline = rdzv::Clock::now() + kPatience;
  return UniqueFd(rdzv::connectTcp("127.0.0.1", store().port(), deadline));
}

// Sends what the store reads of `bytes`: it may close the connection early.
void sendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

std::string drain(int fd) {
  std::string replies;
  char buffer[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(kPatience / std::chrono::milliseconds(1)));
    check(ready != 0, "the store kept a connection open after its client ended it");
    if (ready < 0 && errno == EINTR) continue;
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return replies;  // closed (or reset: the store dropped it)
    replies.append(buffer, static_cast<size_t>(n));
  }
}

bool isReply(rdzv::Op op) { return static_cast<uint8_t>(op) >= 100; }

}  // namespace

std::string exchangeWithStore(std::string_view bytes) {
  try {
    UniqueFd fd = connectToStore();
    sendAll(fd.get(), bytes);
    ::shutdown(fd.get(), SHUT_WR);
    return drain(fd.get());
  } catch (const std::exception& e) {
    unexpected("cannot talk to the store", e.what());
  }
}

void checkReplies(std::string_view replies) {
  while (!replies.empty()) {
    rdzv::Frame frame;
    size_t consumed = 0;
    rdzv::DecodeStatus status = rdzv::decodeFrame(replies, frame, consumed);
    check(status != rdzv::DecodeStatus::kMalformed, "the store sent a malformed frame");
    if (status == rdzv::DecodeStatus::kNeedMore) return;
    check(isReply(frame.op), "the store sent a request opcode");
    replies.remove_prefix(consumed);
  }
}

void checkStoreAnswers() {
  try {
    store().check();
    rdzv::StoreClient client("127.0.0.1", store().port(), std::string(kStoreToken),
                             std::chrono::milliseconds(kPatience));
    client.set("fuzz/alive", "yes");
    check(client.tryGet("fuzz/alive") == "yes", "the store lost a key a fresh client set");
  } catch (const std::exception& e) {
    unexpected("the store no longer answers a fresh client", e.what());
  }
}

}  // namespace distrun::fuzz
