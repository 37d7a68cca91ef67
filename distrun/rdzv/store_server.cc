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

// Whether the peer's kernel ended the connection (EOF, a reset): its
// process is gone, rather than its host silent (a keepalive or user
// time-out, no route). Read before the socket closes.
bool endedByPeersKernel(int fd) {
  int error = 0;
  socklen_t length = sizeof(error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) return false;
  return error == 0 || error == ECONNRESET || error == EPIPE;
}

// kAdd's new total: `current` (a stored value, read as a number) plus
// `delta`. nullopt when `delta` is not a decimal long long or the sum would
// overflow one (found by fuzz/store_frames; the connection is then closed).
std::optional<long long> addedTotal(const std::string& current, const std::string& delta) {
  char* end = nullptr;
  errno = 0;
  long long step = std::strtoll(delta.c_str(), &end, 10);
  if (delta.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  long long total = 0;
  if (__builtin_add_overflow(std::strtoll(current.c_str(), nullptr, 10), step, &total)) {
    return std::nullopt;
  }
  return total;
}

// TCP's errors that accept4 passes on from a connection that failed while
// it waited in the backlog (accept(2)): that client gave up, the next one
// may be fine.
bool clientGaveUp(int err) {
  switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETDOWN:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

UniqueFd listenOn(const std::string& host, int port) {
  int bound = 0;
  return UniqueFd(listenTcp(host, port, &bound));
}

}  // namespace

// A client's last will (wire.h, kWill).
struct StoreServer::Will {
  std::string counter;
  std::string prefix;
  std::string value;
  std::string closedValue;  // when the peer's kernel ended the connection; "": value
};

struct StoreServer::Connection {
  UniqueFd fd;
  bool authenticated = false;
  bool closing = false;  // flush `out`, then close
  std::string in;
  std::string out;
  std::string waitingFor;  // key of a parked kGet; requests queue behind it
  bool waiting = false;
  uint32_t events = 0;
  uint64_t serial = 0;  // tells this connection from a later one on the same fd
  std::optional<Will> will;
  // Put before each key this connection sends: its hello's key space and a
  // NUL (no key of a space can then equal one of another, or of the root).
  std::string keyPrefix;
};

StoreServer::StoreServer(const std::string& host, int port, std::string token, EpollWait epollWait,
                         StoreLimits limits)
    : StoreServer(listenOn(host, port), host, std::move(token), std::move(epollWait), limits) {}

StoreServer::StoreServer(UniqueFd listening, const std::string& host, std::string token,
                         EpollWait epollWait, StoreLimits limits)
    : token_(std::move(token)),
      epollWait_(epollWait ? std::move(epollWait) : EpollWait(::epoll_wait)),
      limits_(limits),
      listenFd_(std::move(listening)) {
  port_ = boundPort(listenFd_.get(), host.empty() ? "0.0.0.0" : host);
  where_ = fmt::format("rendezvous store at {}:{}", host.empty() ? "0.0.0.0" : host, port_);
  epollFd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epollFd_) throw SystemError("epoll_create1", where_, errno);
  stopFd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stopFd_) throw SystemError("eventfd", where_, errno);
  watch(listenFd_.get(), EPOLL_CTL_ADD, EPOLLIN);
  watch(stopFd_.get(), EPOLL_CTL_ADD, EPOLLIN);
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() { stop(); }

void StoreServer::stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  // Fails only with EAGAIN, when the counter is already above zero: the
  // loop wakes either way (or has stopped already).
  [[maybe_unused]] ssize_t n = ::write(stopFd_.get(), &one, sizeof(one));
  thread_.join();
  waiters_.clear();
  connections_.clear();
  listenFd_.reset();
}

void StoreServer::check() const {
  std::lock_guard lock(failureMutex_);
  if (failure_) std::rethrow_exception(failure_);
}

void StoreServer::loop() {
  try {
    serve();
  } catch (const std::exception& e) {
    abandon(std::current_exception(), e.what());
  } catch (...) {
    abandon(std::current_exception(), "an unknown error");
  }
}

void StoreServer::serve() {
  std::vector<epoll_event> events(256);
  while (true) {
    const int n = epollWait_(epollFd_.get(), events.data(), static_cast<int>(events.size()),
                             msUntilNextHelloDeadline());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("epoll_wait", where_, errno);
    for (int i = 0; i < n; ++i) {
      if (!dispatch(events[static_cast<size_t>(i)])) return;
    }
    closeLateHellos();
  }
}

// epoll_wait's time-out: until the oldest pending connection's deadline
// (-1: none pending).
int StoreServer::msUntilNextHelloDeadline() const {
  if (pending_.empty()) return -1;
  const auto left = pending_.front().deadline - std::chrono::steady_clock::now();
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<long long>(ms, 1 << 30));
}

bool StoreServer::isPending(int fd, uint64_t serial) const {
  auto it = connections_.find(fd);
  return it != connections_.end() && it->second->serial == serial && !it->second->authenticated;
}

// Closes the pending connections whose deadline passed, after reading what
// each sent (a hello that arrived while the loop was busy still counts).
void StoreServer::closeLateHellos() {
  const auto now = std::chrono::steady_clock::now();
  while (!pending_.empty()) {
    const PendingEntry entry = pending_.front();
    const bool live = isPending(entry.fd, entry.serial);
    if (live && entry.deadline > now) return;
    pending_.pop_front();
    if (live) closeUnlessHelloArrived(entry);
  }
}

// Reads what a pending connection sent (a hello that arrived while the loop
// was busy still counts), then closes it if it is still pending. False when
// it proved the token and stays.
bool StoreServer::closeUnlessHelloArrived(const PendingEntry& entry) {
  onReadable(*connections_.at(entry.fd));
  auto it = connections_.find(entry.fd);
  if (it == connections_.end() || it->second->serial != entry.serial) return true;  // it left
  if (it->second->authenticated) return false;
  disconnect(entry.fd, true);
  return true;
}

// Closes the oldest pending connection; false when none is pending.
bool StoreServer::closeOldestPending() {
  while (!pending_.empty()) {
    const PendingEntry entry = pending_.front();
    pending_.pop_front();
    if (isPending(entry.fd, entry.serial) && closeUnlessHelloArrived(entry)) return true;
  }
  return false;
}

// Handles one event; false when it is the request to stop.
bool StoreServer::dispatch(const epoll_event& event) {
  const int fd = event.data.fd;
  if (fd == stopFd_.get()) return false;
  if (fd == listenFd_.get()) {
    accept();
    return true;
  }
  auto it = connections_.find(fd);
  if (it == connections_.end()) return true;
  if (event.events & (EPOLLERR | EPOLLHUP)) {
    disconnect(fd, false);
    return true;
  }
  if (event.events & EPOLLIN) onReadable(*it->second);
  it = connections_.find(fd);
  if (it != connections_.end() && (event.events & EPOLLOUT)) onWritable(*it->second);
  return true;
}

// The loop failed: keeps the error for check(), tells every client that
// proved the token why, and closes every socket, so that nobody waits on a
// store that no longer serves.
void StoreServer::abandon(std::exception_ptr error, const std::string& cause) {
  {
    std::lock_guard lock(failureMutex_);
    failure_ = std::move(error);
  }
  listenFd_.reset();  // first: a client told below finds it closed
  for (auto& [fd, c] : connections_) {
    if (!c->authenticated) continue;
    encodeFrame(Frame{Op::kFailed, {cause}}, c->out);
    // One try on the non-blocking socket: a client whose buffer is full
    // sees the connection close instead.
    [[maybe_unused]] ssize_t n = ::send(fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
  }
  waiters_.clear();
  connections_.clear();
}

void StoreServer::watch(int fd, int op, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (::epoll_ctl(epollFd_.get(), op, fd, &ev) != 0) {
    throw SystemError("epoll_ctl", where_, errno);
  }
}

// Out of descriptors (EMFILE, ENFILE) with no pending connection to close,
// or out of memory, is the loop's failure: the listening socket would stay
// readable and the loop spin, while the agents that cannot connect wait out
// their time-outs.
void StoreServer::accept() {
  while (true) {
    UniqueFd fd(::accept4(listenFd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (!fd && clientGaveUp(errno)) continue;
    if (!fd && (errno == EMFILE || errno == ENFILE) && closeOldestPending()) continue;
    if (!fd) throw SystemError("accept4", where_, errno);
    if (connections_.size() >= limits_.maxConnections) {
      rejected_++;
      continue;  // closes it
    }
    if (pendingCount_ >= limits_.maxPending) closeOldestPending();
    int one = 1;
    if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
      throw SystemError("setsockopt", where_, errno);
    }
    setKeepAlive(fd.get(), where_);
    watch(fd.get(), EPOLL_CTL_ADD, EPOLLIN);
    auto c = std::make_unique<Connection>();
    c->events = EPOLLIN;
    c->serial = nextSerial_++;
    const int raw = fd.get();
    pending_.push_back({std::chrono::steady_clock::now() + limits_.helloTimeout, raw, c->serial});
    pendingCount_++;
    c->fd = std::move(fd);
    connections_[raw] = std::move(c);
  }
}

void StoreServer::onReadable(Connection& c) {
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(c.fd.get(), buffer, sizeof(buffer));
    if (n > 0) {
      c.in.append(buffer, static_cast<size_t>(n));
      if (!c.authenticated && c.in.size() > kMaxHelloBody + 4) {
        disconnect(c.fd.get(), true);
        return;
      }
      // A short read drained the socket: skip the read that would only
      // say EAGAIN (one system call per request; epoll is level-triggered,
      // so bytes that arrive later are reported again).
      if (static_cast<size_t>(n) < sizeof(buffer)) break;
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      disconnect(c.fd.get(), false);
      return;
    }
    if (errno == EAGAIN) break;
  }
  processFrames(c);
}

// Handles the complete frames in `c.in`, in order, until one waits. Erases
// what it handled once at the end: a pipelined batch of thousands of frames
// costs no quadratic copying. While a kGet waits, the replies before it
// stay unsent and leave with its own (one send, one wake-up of the client,
// instead of two: the rendezvous' agents each have a set before their get).
void StoreServer::processFrames(Connection& c) {
  int fd = c.fd.get();
  size_t done = 0;
  while (!c.waiting && !c.closing) {
    Frame frame;
    size_t used = 0;
    DecodeStatus status = decodeFrame(std::string_view(c.in).substr(done), frame, used);
    if (status == DecodeStatus::kNeedMore) break;
    if (status == DecodeStatus::kMalformed || !handle(c, frame)) {
      disconnect(fd, true);
      return;
    }
    done += used;
  }
  c.in.erase(0, done);
  if (connections_.count(fd) && !c.waiting) updateInterest(c);
}

bool StoreServer::handle(Connection& c, Frame& frame) {
  if (!fieldCountFits(frame.op, frame.fields.size())) return false;
  if (!c.authenticated) return frame.op == Op::kHello && greet(c, frame);
  if (frame.fields[0].size() > limits_.maxKeyBytes) return false;
  const std::string key = c.keyPrefix + frame.fields[0];
  switch (frame.op) {
    case Op::kSet:
      reply(c, Frame{Op::kOk, {}});
      storeSet(key, frame.fields[1]);
      return true;
    case Op::kGet: {
      auto it = values_.find(key);
      if (it != values_.end()) {
        reply(c, Frame{Op::kValue, {it->second}});
      } else {
        c.waiting = true;
        c.waitingFor = key;
        waiters_[key].push_back(c.fd.get());
      }
      return true;
    }
    case Op::kTryGet: {
      auto it = values_.find(key);
      reply(c, it == values_.end() ? Frame{Op::kMissing, {}} : Frame{Op::kValue, {it->second}});
      return true;
    }
    case Op::kAdd: {
      std::optional<long long> total = storeAdd(key, frame.fields[1]);
      if (total) reply(c, Frame{Op::kValue, {std::to_string(*total)}});
      return total.has_value();
    }
    case Op::kCompareSet:
      compareSet(c, key, frame.fields[1], frame.fields[2]);
      return true;
    case Op::kWill:
      return leaveWill(c, frame);
    default:
      return false;
  }
}

// A pending connection's kHello: accepted with the job token (and then
// works in the key space it names), else refused and closed.
bool StoreServer::greet(Connection& c, const Frame& hello) {
  if (hello.fields[0] != token_) {
    reply(c, Frame{Op::kRefused, {}});
    c.closing = true;
    rejected_++;
    return true;
  }
  if (hello.fields.size() == 2 && !hello.fields[1].empty()) {
    c.keyPrefix = hello.fields[1] + '\0';
  }
  c.authenticated = true;
  pendingCount_--;
  reply(c, Frame{Op::kOk, {}});
  return true;
}

// kCompareSet: one step, so that of several agents racing to change a key
// exactly one sees its `expected` (docs/launcher.md, "Elastic rendezvous").
void StoreServer::compareSet(Connection& c, const std::string& key, const std::string& expected,
                             std::string& desired) {
  auto it = values_.find(key);
  const std::string& current = it == values_.end() ? std::string() : it->second;
  if (current != expected) {
    reply(c, Frame{Op::kValue, {current}});
    return;
  }
  std::string& held = values_[key];
  held = std::move(desired);
  reply(c, Frame{Op::kValue, {held}});
  wake(key, held);
}

void StoreServer::reply(Connection& c, const Frame& frame) { encodeFrame(frame, c.out); }

void StoreServer::storeSet(const std::string& key, const std::string& value) {
  values_[key] = value;
  wake(key, value);
}

// kAdd: the new total, or nullopt (nothing changed) when `delta` is not a
// number or the total would overflow.
std::optional<long long> StoreServer::storeAdd(const std::string& key, const std::string& delta) {
  auto it = values_.find(key);
  std::optional<long long> total = addedTotal(it == values_.end() ? "" : it->second, delta);
  if (total) storeSet(key, std::to_string(*total));
  return total;
}

// kWill: keeps (or, with an empty counter, clears) the connection's will.
bool StoreServer::leaveWill(Connection& c, Frame& frame) {
  if (frame.fields[1].size() > limits_.maxKeyBytes) return false;
  c.will.reset();
  if (!frame.fields[0].empty()) {
    c.will = Will{c.keyPrefix + frame.fields[0], c.keyPrefix + frame.fields[1],
                  std::move(frame.fields[2]),
                  frame.fields.size() > 3 ? std::move(frame.fields[3]) : std::string()};
  }
  reply(c, Frame{Op::kOk, {}});
  return true;
}

// Appends a closed connection's will to its sequence, as `n = add(counter,
// 1)` then `set(prefix + (n - 1), value)` from a client would. A counter at
// the top of a long long appends nothing.
void StoreServer::carryOut(const Will& will, bool closedByPeer) {
  std::optional<long long> total = storeAdd(will.counter, "1");
  const std::string& value =
      closedByPeer && !will.closedValue.empty() ? will.closedValue : will.value;
  if (total) storeSet(will.prefix + std::to_string(*total - 1), value);
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
    ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    disconnect(c.fd.get(), false);
    return;
  }
  if (c.out.empty() && c.closing) {
    disconnect(c.fd.get(), false);
    return;
  }
  uint32_t want = EPOLLIN | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  if (want == c.events) return;
  c.events = want;
  watch(c.fd.get(), EPOLL_CTL_MOD, want);
}

void StoreServer::disconnect(int fd, bool rejected) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  if (rejected) rejected_++;
  if (!it->second->authenticated) pendingCount_--;
  if (it->second->waiting) {
    auto& list = waiters_[it->second->waitingFor];
    std::erase(list, fd);
  }
  std::optional<Will> will = std::move(it->second->will);
  const bool closedByPeer = will && endedByPeersKernel(fd);
  watch(fd, EPOLL_CTL_DEL, 0);
  connections_.erase(it);  // closes the socket
  // After the erase: carrying it out wakes waiters, whose own requests may
  // close (and so look up) other connections.
  if (will) carryOut(*will, closedByPeer);
}

}  // namespace distrun::rdzv
