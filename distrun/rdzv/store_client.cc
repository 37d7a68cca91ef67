#include "distrun/rdzv/store_client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

StoreClient::StoreClient(std::string host, int port, std::string token,
                         std::chrono::milliseconds connectTimeout)
    : host_(std::move(host)),
      port_(port),
      token_(std::move(token)),
      address_(fmt::format("{}:{}", host_, port_)) {
  connect(connectTimeout);
}

StoreClient::~StoreClient() = default;

void StoreClient::connect(std::chrono::milliseconds timeout) {
  fd_.reset(connectTcp(host_, port_, Clock::now() + timeout));
  setKeepAlive(fd_.get(), address_);
  Frame reply = request(Frame{Op::kHello, {token_}}, Clock::now() + timeout);
  if (reply.op == Op::kRefused) {
    fd_.reset();
    throw RendezvousError(
        fmt::format("the rendezvous store at {} refused this agent's token: every agent "
                    "of a job needs the same DISTRUN_TOKEN (when unset, it is derived from "
                    "the user's distrun secret file, which every node must share; where "
                    "they do not, export the same DISTRUN_TOKEN on every node)",
                    address_));
  }
}

Frame StoreClient::request(const Frame& frame, std::optional<Clock::time_point> deadline) {
  if (!fd_) {
    throw RendezvousError(fmt::format("no connection to the rendezvous store at {}", address_));
  }
  std::string bytes;
  encodeFrame(frame, bytes);
  writeAll(fd_.get(), bytes, address_);
  Clock::time_point until = deadline.value_or(Clock::time_point::max());
  while (true) {
    Frame reply;
    size_t used = 0;
    DecodeStatus status = decodeFrame(in_, reply, used);
    if (status == DecodeStatus::kFrame) {
      in_.erase(0, used);
      checkReply(reply);
      return reply;
    }
    if (status == DecodeStatus::kMalformed) {
      throw RendezvousError(
          fmt::format("the rendezvous store at {} sent a malformed reply", address_));
    }
    if (!readSome(fd_.get(), in_, until, address_)) {
      // The answer may still come; this connection can no longer be used.
      fd_.reset();
      in_.clear();
      throw TimeoutError(
          fmt::format("the rendezvous store at {} did not answer in time", address_));
    }
  }
}

void StoreClient::checkReply(const Frame& reply) {
  if (reply.op != Op::kFailed) return;
  fd_.reset();  // the server closes it too
  in_.clear();
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
                          const std::string& value) {
  DISTRUN_ENFORCE(!counterKey.empty(), "a will needs the key of its sequence's counter");
  request(Frame{Op::kWill, {counterKey, prefix, value}}, std::nullopt);
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
}

}  // namespace distrun::rdzv
