#include "distrun/comm/shm/shared_memory_messages.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "distrun/comm/shm/shared_waiting.h"

namespace distrun::comm {

using namespace shm;  // the waiting both kinds of shared-memory operation share

namespace {

constexpr uint64_t kMessagesMagic = 0x31676d6873727464;  // "dtrshmg1"
constexpr size_t kMostHalf = 64 << 10;
constexpr size_t kLeastHalf = 4 << 10;
constexpr size_t kAllChannels = 16 << 20;

}  // namespace

struct SharedMemoryMessages::Header {
  uint64_t magic;
  uint64_t halfBytes;
  int32_t ranks;
};

// Rung by whoever posts to or takes from a channel this rank waits on.
struct SharedMemoryMessages::Doorbell {
  alignas(kLine) std::atomic<uint32_t> rings;
  std::atomic<uint32_t> sleeping;  // 1 while its rank may be in futexWait
};

// One piece of a message, as its sender posts it.
struct SharedMemoryMessages::Piece {
  uint64_t total;    // bytes in the whole message
  uint64_t offset;   // of this piece in it
  uint64_t bytes;    // in this piece (in the half of its sequence's parity)
  uint64_t address;  // a direct message: the whole of it, in the sender's
                     // process; 0: the piece is in the half
  int32_t tag;
  uint32_t type;
};

// From one rank to another: the sender's line (what it posted), the
// receiver's (what it took), then the two halves.
struct SharedMemoryMessages::Channel {
  alignas(kLine) std::atomic<uint32_t> sent;
  Piece pieces[2];  // by sequence parity, like the halves
  alignas(kLine) std::atomic<uint32_t> taken;
};

// One message in flight on this rank.
struct SharedMemoryMessages::Transfer {
  bool sending;
  int peer;
  int tag;
  DataType type;
  char* data;
  size_t bytes;
  bool direct;
  size_t done = 0;         // bytes posted or received
  bool posted = false;     // a direct send: its address is posted
  uint32_t directPiece{};  // as the sequence of this piece
  bool finished = false;
};

size_t SharedMemoryMessages::halfBytesFor(int size, size_t slotBytes) {
  const auto channels = static_cast<size_t>(size) * static_cast<size_t>(size - 1);
  size_t half = kMostHalf;
  while (half > kLeastHalf && channels * 2 * half > kAllChannels) half /= 2;
  return std::min(half, roundUp(std::max<size_t>(slotBytes, 1), kLine));
}

size_t SharedMemoryMessages::segmentBytes(int size, size_t halfBytes) {
  const auto ranks = static_cast<size_t>(size);
  return kLine + sizeof(Doorbell) * ranks +
         ranks * ranks * (sizeof(Channel) + 2 * roundUp(halfBytes, kLine));
}

void SharedMemoryMessages::format(SharedSegment& segment, int size, size_t halfBytes) {
  auto* header = new (segment.data()) Header{};
  header->magic = kMessagesMagic;
  header->halfBytes = halfBytes;
  header->ranks = size;
  const auto ranks = static_cast<size_t>(size);
  char* bells = segment.data() + kLine;
  for (size_t r = 0; r < ranks; ++r) new (bells + r * sizeof(Doorbell)) Doorbell{};
  char* channels = bells + ranks * sizeof(Doorbell);
  const size_t channelBytes = sizeof(Channel) + 2 * roundUp(halfBytes, kLine);
  for (size_t c = 0; c < ranks * ranks; ++c) new (channels + c * channelBytes) Channel{};
}

SharedMemoryMessages::SharedMemoryMessages(SharedSegment segment, int rank, int size,
                                           size_t halfBytes, const SharedMemoryCollectives& peers)
    : segment_(std::move(segment)),
      rank_(rank),
      size_(size),
      halfBytes_(roundUp(halfBytes, kLine)),
      channelBytes_(sizeof(Channel) + 2 * halfBytes_),
      peers_(peers) {
  const Header& h = header();
  if (segment_.size() < segmentBytes(size, halfBytes) || h.magic != kMessagesMagic ||
      h.ranks != size || h.halfBytes != halfBytes) {
    throw std::runtime_error(fmt::format(
        "the message segment is not laid out for {} ranks of {}-byte halves", size, halfBytes));
  }
}

SharedMemoryMessages::Header& SharedMemoryMessages::header() const {
  return *std::launder(reinterpret_cast<Header*>(segment_.data()));
}

SharedMemoryMessages::Doorbell& SharedMemoryMessages::doorbell(int rank) const {
  return *std::launder(reinterpret_cast<Doorbell*>(segment_.data() + kLine +
                                                   sizeof(Doorbell) * static_cast<size_t>(rank)));
}

SharedMemoryMessages::Channel& SharedMemoryMessages::channel(int from, int to) const {
  const auto ranks = static_cast<size_t>(size_);
  const size_t index = static_cast<size_t>(from) * ranks + static_cast<size_t>(to);
  return *std::launder(reinterpret_cast<Channel*>(
      segment_.data() + kLine + sizeof(Doorbell) * ranks + index * channelBytes_));
}

char* SharedMemoryMessages::half(int from, int to, uint32_t sequence) const {
  return reinterpret_cast<char*>(&channel(from, to)) + sizeof(Channel) +
         (sequence & 1u) * halfBytes_;
}

// The store and load are sequentially consistent, as sleep()'s are: either
// this sees the waiter's `sleeping` and wakes it, or the waiter sees the
// new count and does not sleep.
void SharedMemoryMessages::ring(int rank) const {
  Doorbell& bell = doorbell(rank);
  bell.rings.fetch_add(1);
  if (bell.sleeping.load() != 0) wake(bell);
}

void SharedMemoryMessages::wake(Doorbell& bell) { futexWakeAll(bell.rings); }

void SharedMemoryMessages::wakeAll() {
  for (int r = 0; r < size_; ++r) {
    doorbell(r).rings.fetch_add(1);
    wake(doorbell(r));
  }
}

SharedMemoryMessages::Transfer SharedMemoryMessages::outgoing(const void* data, size_t count,
                                                              DataType type, int peer,
                                                              int tag) const {
  const size_t bytes = count * sizeOf(type);
  return Transfer{true,
                  peer,
                  tag,
                  type,
                  static_cast<char*>(const_cast<void*>(data)),
                  bytes,
                  bytes >= directFromBytes_};
}

SharedMemoryMessages::Transfer SharedMemoryMessages::incoming(void* data, size_t count,
                                                              DataType type, int peer, int tag) {
  return Transfer{false, peer, tag, type, static_cast<char*>(data), count * sizeOf(type), false};
}

void SharedMemoryMessages::send(const void* data, size_t count, DataType type, int peer, int tag) {
  Transfer out = outgoing(data, count, type, peer, tag);
  run({&out});
}

void SharedMemoryMessages::recv(void* data, size_t count, DataType type, int peer, int tag) {
  Transfer in = incoming(data, count, type, peer, tag);
  run({&in});
}

void SharedMemoryMessages::sendRecv(const void* sendData, int sendPeer, void* recvData,
                                    int recvPeer, size_t count, DataType type, int tag) {
  Transfer out = outgoing(sendData, count, type, sendPeer, tag);
  Transfer in = incoming(recvData, count, type, recvPeer, tag);
  run({&out, &in});
}

void SharedMemoryMessages::run(std::initializer_list<Transfer*> transfers) {
  peers_.throwIfAborted();  // a communicator that failed stays failed
  const auto deadline = std::chrono::steady_clock::now() + peers_.timeout();
  auto spinUntil = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 0;; ++i) {
    const uint32_t seen = doorbell(rank_).rings.load(std::memory_order_acquire);
    bool moved = false;
    bool finished = true;
    for (Transfer* t : transfers) {
      if (!t->finished) moved |= advance(*t);
      finished = finished && t->finished;
    }
    if (finished) return;
    peers_.pollAgain();
    if (moved) {
      spinUntil = std::chrono::steady_clock::now() + kSpin;
    } else if (i % 64 == 63 && std::chrono::steady_clock::now() > spinUntil) {
      sleep(seen, transfers, deadline);
    }
  }
}

bool SharedMemoryMessages::advance(Transfer& t) const {
  return t.sending ? advanceSend(t) : advanceRecv(t);
}

// Posts every piece whose half is free (the receiver took the piece two
// before it); a direct message posts its address once, then waits until it
// is taken.
bool SharedMemoryMessages::advanceSend(Transfer& t) const {
  Channel& c = channel(rank_, t.peer);
  if (t.direct && t.posted) {
    t.finished = reached(c.taken.load(std::memory_order_acquire), t.directPiece);
    return t.finished;
  }
  bool moved = false;
  while (!t.finished) {
    const uint32_t sequence = c.sent.load(std::memory_order_relaxed) + 1;
    if (!reached(c.taken.load(std::memory_order_acquire), sequence - 2)) break;
    const size_t n = t.direct ? t.bytes : std::min(halfBytes_, t.bytes - t.done);
    if (!t.direct) std::memcpy(half(rank_, t.peer, sequence), t.data + t.done, n);
    c.pieces[sequence & 1u] = Piece{.total = t.bytes,
                                    .offset = t.done,
                                    .bytes = n,
                                    .address = t.direct ? reinterpret_cast<uint64_t>(t.data) : 0,
                                    .tag = t.tag,
                                    .type = static_cast<uint32_t>(t.type)};
    c.sent.store(sequence, std::memory_order_release);
    ring(t.peer);
    moved = true;
    t.done += n;
    if (t.direct) {
      t.posted = true;
      t.directPiece = sequence;
      break;
    }
    t.finished = t.done == t.bytes;
  }
  return moved;
}

// Takes every piece posted for this message; each taken piece frees its
// half (or, direct, the sender's buffer).
bool SharedMemoryMessages::advanceRecv(Transfer& t) const {
  Channel& c = channel(t.peer, rank_);
  bool moved = false;
  while (!t.finished) {
    const uint32_t sequence = c.taken.load(std::memory_order_relaxed) + 1;
    if (!reached(c.sent.load(std::memory_order_acquire), sequence)) break;
    const Piece& piece = c.pieces[sequence & 1u];
    checkPiece(t, piece);
    if (piece.address != 0) {
      peers_.readFrom(t.peer, piece.address, t.data, t.bytes);
      // A sender that gave up meanwhile (a failure elsewhere, its timeout)
      // raised the abort before its buffer could go: what was read may be
      // another object's bytes.
      peers_.throwIfAborted();
    } else {
      std::memcpy(t.data + t.done, half(t.peer, rank_, sequence), piece.bytes);
    }
    t.done += piece.bytes;
    c.taken.store(sequence, std::memory_order_release);
    ring(t.peer);
    moved = true;
    t.finished = t.done == t.bytes;
  }
  return moved;
}

void SharedMemoryMessages::checkPiece(const Transfer& t, const Piece& piece) const {
  const auto type = static_cast<DataType>(piece.type);
  // As over TCP, the tag and the length must match; the types need not.
  if (piece.tag == t.tag && piece.total == t.bytes && piece.offset == t.done) return;
  throw SharedMemoryFailure(
      SharedMemoryFailure::Kind::kMismatch, t.peer,
      fmt::format("rank {}'s next message to this rank is {} x {} with tag {}, where this rank "
                  "receives {} x {} with tag {} (messages between two ranks arrive in order)",
                  t.peer, piece.total / sizeOf(type), nameOf(type), piece.tag,
                  t.bytes / sizeOf(t.type), nameOf(t.type), t.tag));
}

void SharedMemoryMessages::sleep(uint32_t seen, std::initializer_list<Transfer*> transfers,
                                 std::chrono::steady_clock::time_point deadline) const {
  for (Transfer* t : transfers) {
    if (t->finished) continue;
    try {
      peers_.checkPeer(t->peer, deadline);
    } catch (const SharedMemoryFailure& f) {
      // A sender may post its last pieces and leave between the last
      // advance and this check: those pieces are still in the channel (it
      // stored `left` after them), so only a transfer they do not finish
      // has lost its peer.
      if (f.kind != SharedMemoryFailure::Kind::kPeerExited) throw;
      advance(*t);
      if (!t->finished) throw;
      return;  // run() goes on with the others
    }
  }
  Doorbell& bell = doorbell(rank_);
  bell.sleeping.store(1);
  if (bell.rings.load() == seen) {
    const auto left = deadline - std::chrono::steady_clock::now();
    futexWait(bell.rings, seen, std::clamp<std::chrono::nanoseconds>(left, {}, kCheckEvery));
  }
  bell.sleeping.store(0, std::memory_order_relaxed);
}

}  // namespace distrun::comm
