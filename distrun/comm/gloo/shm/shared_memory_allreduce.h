#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "distrun/comm/dtype.h"
#include "distrun/comm/gloo/shm/shared_regions.h"
#include "distrun/comm/gloo/shm/shared_segment.h"

namespace distrun::comm {

// Why a shared-memory allreduce gave up; the communicator turns it into the
// error the user sees, naming the peer from its directory.
struct SharedMemoryFailure : std::runtime_error {
  enum class Kind {
    kPeerExited,  // `peer`'s process is gone (or a zombie), or it closed
                  // its communicator
    kTimedOut,    // `peer` did not arrive within the timeout
    kAborted,     // `peer` failed elsewhere and told the others
    kMismatch,    // `peer` called a different operation (the message
                  // says how); every rank sees it and fails
  };
  SharedMemoryFailure(Kind what, int who, const std::string& message)
      : std::runtime_error(message), kind(what), peer(who) {}
  Kind kind;
  int peer;
};

// Allreduce among the ranks of one host through one shared segment, with no
// sockets and no helper threads: each rank copies its input into its own
// slot, posts a sequence number, waits for every peer's, and reduces all
// slots itself in rank order, so every rank computes the same bits. Slots
// alternate between two sets by sequence parity, so a rank may start the
// next operation while a slower one still reads this one's. A waiting rank
// spins briefly, then sleeps on a futex; every 50 ms it checks that the
// peer it waits for is alive and has not left, and that no rank gave up (abort()).
// Inputs larger than a slot go in slot-sized pieces.
//
// runInPlace reduces data that lies in SharedRegions instead, with no copy
// in or out: once every rank has arrived, each one reduces its own share
// of the elements over all ranks' regions, in rank order, and writes the
// result into every region; a second arrival tells everyone that all
// shares are written. Every rank ends with the same bits as run() gives.
//
// Each rank posts what it is about to do (in place or not, where, how
// many, which type and op) beside its sequence number, and checks its
// peers' against its own: ranks that call differently fail (kMismatch)
// instead of mixing unrelated data.
class SharedMemoryAllreduce {
 public:
  // The segment size `size` ranks need for slots of `slotBytes`.
  static size_t segmentBytes(int size, size_t slotBytes);
  // Writes the layout into a freshly created, zero-filled segment, before
  // any other rank attaches.
  static void format(SharedSegment& segment, int size, size_t slotBytes);

  // Attaches to a formatted segment. Throws std::runtime_error when its
  // layout is not the one `size` and `slotBytes` describe.
  SharedMemoryAllreduce(SharedSegment segment, int rank, int size, size_t slotBytes,
                        std::chrono::milliseconds timeout);
  // Tells the peers that this rank left: one waiting for it fails now.
  ~SharedMemoryAllreduce();
  SharedMemoryAllreduce(const SharedMemoryAllreduce&) = delete;
  SharedMemoryAllreduce& operator=(const SharedMemoryAllreduce&) = delete;

  // out = OP over ranks of in (kAvg arrives as kSum). in == out is fine.
  // Throws SharedMemoryFailure.
  void run(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // data[i] = OP over ranks of data[i], where data is `count` elements at
  // byte `offset` of each rank's region of `regions`; kAvg divides by the
  // number of ranks. Every rank passes the same regions, offset and count.
  // Throws SharedMemoryFailure.
  void runInPlace(const SharedRegions& regions, size_t offset, size_t count, DataType type,
                  ReduceOp op);

  // Tells every rank waiting here, now or later, that this one gave up.
  void abort();

 private:
  struct Header;
  struct RankLine;
  struct Call;

  Header& header() const;
  RankLine& line(int rank) const;
  char* slot(uint32_t sequence, int rank) const;
  void post(uint32_t sequence);
  void post(uint32_t sequence, const Call& call);
  void waitForAll(uint32_t sequence, std::chrono::steady_clock::time_point deadline) const;
  void checkCalls(uint32_t sequence) const;
  static std::string describe(const Call& call);
  void reduceShare(const SharedRegions& regions, size_t offset, size_t count, DataType type,
                   ReduceOp op) const;
  void waitFor(int peer, uint32_t sequence, std::chrono::steady_clock::time_point deadline) const;
  void throwIfAborted() const;
  bool exited(int peer) const;

  SharedSegment segment_;
  int rank_;
  int size_;
  size_t slotBytes_;
  std::chrono::milliseconds timeout_;
  uint32_t sequence_ = 0;
};

}  // namespace distrun::comm
