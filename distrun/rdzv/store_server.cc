#include "distrun/rdzv/store_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/socket.h"
#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

namespace {

// Before the hello, a client may send no more than this: a stranger cannot
// make the store buffer megabytes.
constexpr uint32_t kMaxHelloBody = 4096;

}  // namespace

struct StoreServer::Connection {
  int fd;
  bool authenticated = false;
  bool closing = false;  // flush `out`, then close
  std::string in;
  std::string out;
  std::string waitingFor;  // key of a parked kGet; requests queue behind it
  bool waiting = false;
  uint32_t events = 0;
};

StoreServer::StoreServer(const std::string& host, int port, std::string token)
    : token_(std::move(token)) {
  listenFd_ = listenTcp(host, port, &port_);
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epollFd_ < 0) throw SystemError("epoll_create1", "", errno);
  stopFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stopFd_ < 0) throw SystemError("eventfd", "", errno);
  for (int fd : {listenFd_, stopFd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev);
  }
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() {
  stop();
  for (auto& [fd, c] : connections_) ::close(fd);
  for (int fd : {listenFd_, epollFd_, stopFd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void StoreServer::stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(stopFd_, &one, sizeof(one));
  thread_.join();
}

void StoreServer::loop() {
  std::vector<epoll_event> events(256);
  while (true) {
    int n = ::epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    for (int i = 0; i < n; ++i) {
      int fd = events[static_cast<size_t>(i)].data.fd;
      uint32_t ev = events[static_cast<size_t>(i)].events;
      if (fd == stopFd_) return;
      if (fd == listenFd_) {
        accept();
        continue;
      }
      auto it = connections_.find(fd);
      if (it == connections_.end()) continue;
      if (ev & (EPOLLERR | EPOLLHUP)) {
        close(fd, false);
        continue;
      }
      if (ev & EPOLLIN) onReadable(*it->second);
      it = connections_.find(fd);
      if (it != connections_.end() && (ev & EPOLLOUT)) onWritable(*it->second);
    }
  }
}

void StoreServer::accept() {
  while (true) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or out of descriptors: retried next event
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->events = EPOLLIN;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev);
    connections_[fd] = std::move(c);
  }
}

void StoreServer::onReadable(Connection& c) {
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(c.fd, buffer, sizeof(buffer));
    if (n > 0) {
      c.in.append(buffer, static_cast<size_t>(n));
      if (!c.authenticated && c.in.size() > kMaxHelloBody + 4) {
        close(c.fd, true);
        return;
      }
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      close(c.fd, false);
      return;
    }
    if (errno == EAGAIN) break;
  }
  processFrames(c);
}

void StoreServer::processFrames(Connection& c) {
  int fd = c.fd;
  while (!c.waiting && !c.closing) {
    Frame frame;
    size_t used = 0;
    DecodeStatus status = decodeFrame(c.in, frame, used);
    if (status == DecodeStatus::kNeedMore) break;
    if (status == DecodeStatus::kMalformed || !handle(c, frame)) {
      close(fd, true);
      return;
    }
    c.in.erase(0, used);
  }
  if (connections_.count(fd)) updateInterest(c);
}

bool StoreServer::handle(Connection& c, Frame& frame) {
  std::optional<size_t> fields = requestFieldCount(frame.op);
  if (!fields || *fields != frame.fields.size()) return false;
  if (!c.authenticated) {
    if (frame.op != Op::kHello) return false;
    if (frame.fields[0] != token_) {
      reply(c, Frame{Op::kRefused, {}});
      c.closing = true;
      rejected_++;
      return true;
    }
    c.authenticated = true;
    reply(c, Frame{Op::kOk, {}});
    return true;
  }
  const std::string& key = frame.fields[0];
  switch (frame.op) {
    case Op::kSet:
      values_[key] = frame.fields[1];
      reply(c, Frame{Op::kOk, {}});
      wake(key, frame.fields[1]);
      return true;
    case Op::kGet: {
      auto it = values_.find(key);
      if (it != values_.end()) {
        reply(c, Frame{Op::kValue, {it->second}});
      } else {
        c.waiting = true;
        c.waitingFor = key;
        waiters_[key].push_back(c.fd);
      }
      return true;
    }
    case Op::kTryGet: {
      auto it = values_.find(key);
      reply(c, it == values_.end() ? Frame{Op::kMissing, {}}
                                   : Frame{Op::kValue, {it->second}});
      return true;
    }
    case Op::kAdd: {
      char* end = nullptr;
      long long delta = std::strtoll(frame.fields[1].c_str(), &end, 10);
      if (frame.fields[1].empty() || *end != '\0') return false;
      long long total = std::strtoll(values_[key].c_str(), nullptr, 10) + delta;
      values_[key] = std::to_string(total);
      reply(c, Frame{Op::kValue, {values_[key]}});
      wake(key, values_[key]);
      return true;
    }
    default:
      return false;
  }
}

void StoreServer::reply(Connection& c, const Frame& frame) {
  encodeFrame(frame, c.out);
}

void StoreServer::wake(const std::string& key, const std::string& value) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<int> fds = std::move(it->second);
  waiters_.erase(it);
  for (int fd : fds) {
    auto c = connections_.find(fd);
    if (c == connections_.end()) continue;
    c->second->waiting = false;
    reply(*c->second, Frame{Op::kValue, {value}});
    processFrames(*c->second);
  }
}

void StoreServer::onWritable(Connection& c) { updateInterest(c); }

// Flushes what it can (most replies fit the socket buffer at once), then
// asks epoll for writability only while bytes remain.
void StoreServer::updateInterest(Connection& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    close(c.fd, false);
    return;
  }
  if (c.out.empty() && c.closing) {
    close(c.fd, false);
    return;
  }
  uint32_t want = EPOLLIN | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  if (want == c.events) return;
  c.events = want;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = c.fd;
  ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void StoreServer::close(int fd, bool rejected) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (rejected) rejected_++;
  if (it->second->waiting) {
    auto& list = waiters_[it->second->waitingFor];
    std::erase(list, fd);
  }
  ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  connections_.erase(it);
}

}  // namespace distrun::rdzv
