#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "distrun/comm/dtype.h"
#include "distrun/comm/shm/shared_memory_collectives.h"
#include "distrun/comm/shm/shared_segment.h"

namespace distrun::comm {

// Point-to-point messages among the ranks of one host, through a segment of
// their own: one channel for each ordered pair of ranks, with two halves of
// `halfBytes` each. A sender copies a message into the halves a piece at a
// time (while the receiver copies the other half out) and returns once its
// last piece is posted; a message from a size up instead posts where the
// sender's data is, the receiver reads it straight from the sender's
// process (process_vm_readv: one copy where the halves take two), and the
// sender returns once it has. Messages between two ranks arrive in the
// order they were sent, so a receive whose next message carries another
// tag or length would wait forever (the sender waits for it, under
// the Communicator contract); it fails at once instead (kMismatch), naming
// both. A waiting rank spins briefly, then sleeps on its own doorbell word,
// which every rank that posts to it or takes from it rings; every 50 ms it
// asks the collectives (checkPeer) whether its peer is alive and no rank
// gave up.
class SharedMemoryMessages {
 public:
  // The half a channel gets for `size` ranks with the collectives' slots
  // of `slotBytes`: at most a slot and 64 KB, at least 4 KB, and all the
  // channels together about 16 MB at most.
  static size_t halfBytesFor(int size, size_t slotBytes);
  static size_t segmentBytes(int size, size_t halfBytes);
  // Writes the layout into a freshly created, zero-filled segment.
  static void format(SharedSegment& segment, int size, size_t halfBytes);

  // Attaches to a formatted segment; `peers` (which outlives this) says
  // whether a peer is still there and reads its memory. Throws
  // std::runtime_error when the layout is not the one `size` and
  // `halfBytes` describe.
  SharedMemoryMessages(SharedSegment segment, int rank, int size, size_t halfBytes,
                       const SharedMemoryCollectives& peers);
  SharedMemoryMessages(const SharedMemoryMessages&) = delete;
  SharedMemoryMessages& operator=(const SharedMemoryMessages&) = delete;

  // `count` elements of `type` to or from `peer` with `tag`. Throw
  // SharedMemoryFailure.
  void send(const void* data, size_t count, DataType type, int peer, int tag);
  void recv(void* data, size_t count, DataType type, int peer, int tag);
  // Both at once (a ring shift); the two buffers do not overlap.
  void sendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                DataType type, int tag);

  // From now on, messages of at least `bytes` are read from the sender's
  // buffer directly. Every rank calls it with the same `bytes`, or none.
  void readPeersDirectly(size_t bytes) { directFromBytes_ = bytes; }
  // Wakes every rank waiting here, so that it sees a rank gave up.
  void wakeAll();

 private:
  struct Header;
  struct Piece;
  struct Channel;
  struct Doorbell;
  struct Transfer;

  Header& header() const;
  Doorbell& doorbell(int rank) const;
  Channel& channel(int from, int to) const;
  char* half(int from, int to, uint32_t sequence) const;
  void ring(int rank) const;
  static void wake(Doorbell& bell);
  // A message to send (direct from directFromBytes_), or to receive.
  Transfer outgoing(const void* data, size_t count, DataType type, int peer, int tag) const;
  static Transfer incoming(void* data, size_t count, DataType type, int peer, int tag);
  // Runs the transfers together until all are done.
  void run(std::initializer_list<Transfer*> transfers);
  // Does what `t` can do now without waiting; returns whether it did
  // anything.
  bool advance(Transfer& t) const;
  bool advanceSend(Transfer& t) const;
  bool advanceRecv(Transfer& t) const;
  void checkPiece(const Transfer& t, const Piece& piece) const;
  // Sleeps until the doorbell moves past `seen`, at most until the next
  // check of the transfers' peers.
  void sleep(uint32_t seen, std::initializer_list<Transfer*> transfers,
             std::chrono::steady_clock::time_point deadline) const;

  static constexpr size_t kNever = static_cast<size_t>(-1);

  SharedSegment segment_;
  int rank_;
  int size_;
  size_t halfBytes_;
  size_t channelBytes_;
  const SharedMemoryCollectives& peers_;
  size_t directFromBytes_ = kNever;
};

}  // namespace distrun::comm
