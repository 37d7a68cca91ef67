#include "distrun/rdzv/store_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

StoreClient::StoreClient(std::string host, int port, std::string token,
                         std::chrono::milliseconds connectTimeout, std::string keySpace)
    : host_(std::move(host)),
      port_(port),
      token_(std::move(token)),
      keySpace_(std::move(keySpace)),
      address_(fmt::format("{}:{}", host_, port_)) {
  connect(connectTimeout);
}

StoreClient::~StoreClient() = default;

void StoreClient::connect(std::chrono::milliseconds timeout) {
  fd_.reset(connectTcp(host_, port_, Clock::now() + timeout));
  setKeepAlive(fd_.get(), address_);
  Frame reply = request(Frame{Op::kHello, {token_, keySpace_}}, Clock::now() + timeout);
  if (reply.op == Op::kRefused) {
    fd_.reset();
    throw RendezvousError(
        fmt::format("the rendezvous store at {} refused this agent's token: every agent "
                    "of a job needs the same DISTRUN_TOKEN (when unset, it is derived from "
                    "the user's distrun secret file, which every node must share; where "
                    "they do not, export the same DISTRUN_TOKEN on every node); or the store "
                    "there is another job's, with its own token: give this job its own "
                    "--rdzv-endpoint port",
                    address_));
  }
}

Frame StoreClient::request(const Frame& frame, std::optional<Clock::time_point> deadline) {
  std::string bytes;
  encodeFrame(frame, bytes);
  send(bytes);
  return readReply(deadline.value_or(Clock::time_point::max()));
}

void StoreClient::send(const std::string& bytes) {
  if (!fd_) {
    throw RendezvousError(fmt::format("no connection to the rendezvous store at {}", address_));
  }
  writeAll(fd_.get(), bytes, address_);
}

Frame StoreClient::readReply(Clock::time_point until) {
  while (true) {
    Frame reply;
    size_t used = 0;
    DecodeStatus status = decodeFrame(std::string_view(in_).substr(inPos_), reply, used);
    if (status == DecodeStatus::kFrame) {
      inPos_ += used;
      checkReply(reply);
      return reply;
    }
    if (status == DecodeStatus::kMalformed) {
      throw RendezvousError(
          fmt::format("the rendezvous store at {} sent a malformed reply", address_));
    }
    in_.erase(0, inPos_);
    inPos_ = 0;
    if (!readSome(fd_.get(), in_, until, address_)) {
      // The answer may still come; this connection can no longer be used.
      forgetConnection();
      throw TimeoutError(
          fmt::format("the rendezvous store at {} did not answer in time", address_));
    }
  }
}

void StoreClient::forgetConnection() {
  fd_.reset();
  in_.clear();
  inPos_ = 0;
}

void StoreClient::checkReply(const Frame& reply) {
  if (reply.op != Op::kFailed) return;
  forgetConnection();  // the server closes it too
  throw RendezvousError(fmt::format("the rendezvous store at {} stopped serving: {}", address_,
                                    reply.fields.empty() ? "no reason given" : reply.fields[0]));
}

void StoreClient::interrupt() {
  if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);
}

void StoreClient::set(const std::string& key, const std::string& value) {
  request(Frame{Op::kSet, {key, value}}, std::nullopt);
}

std::optional<std::string> StoreClient::get(const std::string& key,
                                            std::chrono::milliseconds timeout) {
  try {
    Frame reply = request(Frame{Op::kGet, {key}}, Clock::now() + timeout);
    return reply.fields.at(0);
  } catch (const TimeoutError&) {
    if (hasWill_) {
      hasWill_ = false;
      throw RendezvousError(fmt::format(
          "no value for '{}' from the rendezvous store at {} in time, on the connection that "
          "holds this client's will: the connection is given up, so the will fired",
          key, address_));
    }
    connect(std::chrono::seconds(30));
    return std::nullopt;
  }
}

std::optional<std::string> StoreClient::tryGet(const std::string& key) {
  Frame reply = request(Frame{Op::kTryGet, {key}}, std::nullopt);
  if (reply.op == Op::kMissing) return std::nullopt;
  return reply.fields.at(0);
}

long long StoreClient::add(const std::string& key, long long delta) {
  Frame reply = request(Frame{Op::kAdd, {key, std::to_string(delta)}}, std::nullopt);
  return std::stoll(reply.fields.at(0));
}

void StoreClient::setWill(const std::string& counterKey, const std::string& prefix,
                          const std::string& value, const std::string& closedValue) {
  DISTRUN_ENFORCE(!counterKey.empty(), "a will needs the key of its sequence's counter");
  Frame will{Op::kWill, {counterKey, prefix, value}};
  if (!closedValue.empty()) will.fields.push_back(closedValue);
  request(will, std::nullopt);
  hasWill_ = true;
}

void StoreClient::clearWill() {
  request(Frame{Op::kWill, {"", "", ""}}, std::nullopt);
  hasWill_ = false;
}

void StoreClient::close() {
  try {
    if (fd_ && hasWill_) clearWill();
  } catch (const Error&) {
    fd_.reset();  // the store is gone or failed: the will may have fired
    throw;
  }
  fd_.reset();
  in_.clear();
  inPos_ = 0;
}

std::string StoreClient::compareSet(const std::string& key, const std::string& expected,
                                    const std::string& desired) {
  return request(Frame{Op::kCompareSet, {key, expected, desired}}, std::nullopt).fields.at(0);
}

std::vector<std::optional<std::string>> StoreClient::run(const StoreBatch& batch,
                                                         std::chrono::milliseconds timeout) {
  const Clock::time_point until = deadlineAfter(timeout);
  send(batch.frames());
  std::vector<std::optional<std::string>> replies;
  replies.reserve(batch.size());
  try {
    while (replies.size() < batch.size()) {
      Frame reply = readReply(until);
      if (reply.op == Op::kMissing) {
        replies.emplace_back();
      } else {
        replies.emplace_back(reply.fields.empty() ? std::string() : std::move(reply.fields[0]));
      }
    }
  } catch (const TimeoutError&) {
    connect(std::chrono::seconds(30));
  }
  return replies;
}

}  // namespace distrun::rdzv
