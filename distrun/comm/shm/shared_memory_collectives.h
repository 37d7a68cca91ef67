#pragma once

#include <sched.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "distrun/comm/dtype.h"
#include "distrun/comm/reduce.h"
#include "distrun/comm/shm/faster_path.h"
#include "distrun/comm/shm/shared_memory_options.h"
#include "distrun/comm/shm/shared_regions.h"
#include "distrun/comm/shm/shared_segment.h"

namespace distrun::comm {

// Why a shared-memory collective gave up; the communicator turns it into the
// error the user sees, naming the peer from its directory.
struct SharedMemoryFailure : std::runtime_error {
  enum class Kind {
    kPeerExited,  // `peer`'s process is gone (or a zombie), or it closed
                  // its communicator
    kTimedOut,    // `peer` did not arrive within the timeout
    kAborted,     // `peer` failed elsewhere and told the others
    kMismatch,    // `peer` called a different operation (the message
                  // says how); every rank sees it and fails
    kUnreadable,  // `peer`'s buffer could not be read directly (the
                  // message says why)
  };
  SharedMemoryFailure(Kind what, int who, const std::string& message)
      : std::runtime_error(message), kind(what), peer(who) {}
  Kind kind;
  int peer;
};

// The collectives among the ranks of one host, through one shared segment,
// with no sockets and no helper threads. Every operation goes in pieces of
// at most a slot: each rank copies its piece of input into its own slot,
// posts a sequence number, waits for every peer's, and then reads what it
// needs from the slots: a small allreduce reduces all slots itself in rank
// order (so every rank computes the same bits), a larger one goes by shares
// (reduceBySharesFrom: each rank reduces its share of the elements, in rank
// order, and copies the others' shares from the slots of the ranks that
// reduced them), reduce_scatter only the part of
// its own block, allgather and alltoall copy out the blocks they receive,
// broadcast copies out the root's slot, and a barrier only posts and waits.
// Slots alternate between two sets by sequence parity, so a rank may start
// the next piece while a slower one still reads this one's. A waiting rank
// spins briefly, then sleeps on a futex; every 50 ms it checks that the
// peer it waits for is alive and has not left, and that no rank gave up
// (abort()).
//
// runInPlace reduces data that lies in SharedRegions instead, with no copy
// in or out: once every rank has arrived, each one reduces its own share
// of the elements over all ranks' regions, in rank order, and writes the
// result into every region; a second arrival tells everyone that all
// shares are written. Every rank ends with the same bits as run() gives.
//
// Each rank posts what it is about to do (which collective, in place or
// not, where, how many, which type and op, which root) beside its sequence
// number, and checks its peers' against its own: ranks that call
// differently fail (kMismatch) instead of mixing unrelated data.
//
// When its node is oversubscribed (more ranks on it than CPUs they may run
// on, the union of their affinity masks), a rank that polls yields its CPU
// (sched_yield) between polls, as Open MPI does on an oversubscribed node:
// the peer it waits for may be the one queued behind it on the same CPU.
//
// An allgather whose output is larger than the cache (streamOutputsFrom)
// goes through the slots and writes its output with streaming stores,
// which send the output's lines to memory without reading them first.
// Large allreduces and allgathers (chooseAllreducePathFrom,
// chooseAllgatherPathFrom) go through the slots or read directly, whichever
// rank 0 timed faster lately.
//
// With readPeersDirectly, allgather and alltoall blocks from a size up
// (and with reduceDirectlyBetween and broadcastDirectlyBetween, allreduces
// and broadcasts in a band of sizes) skip the
// slots: each rank posts where its input is,
// reads its peers' blocks straight from their processes (process_vm_readv,
// the kernel's cross-memory attach: one copy where the slots take two), and
// a last arrival says every rank is done reading, before any returns and
// may change its input. An allreduce reduces only its own share of the
// elements so (read from every rank), posts its output, and reads the
// other shares from the outputs of the ranks that reduced them.
class SharedMemoryCollectives {
 public:
  // The segment size `size` ranks need for slots of `slotBytes`.
  static size_t segmentBytes(int size, size_t slotBytes);
  // Writes the layout into a freshly created, zero-filled segment, before
  // any other rank attaches.
  static void format(SharedSegment& segment, int size, size_t slotBytes);

  // Attaches to a formatted segment. Throws std::runtime_error when its
  // layout is not the one `size` and `slotBytes` describe.
  SharedMemoryCollectives(SharedSegment segment, int rank, int size, size_t slotBytes,
                          std::chrono::milliseconds timeout);
  // Tells the peers that this rank left: one waiting for it fails now.
  ~SharedMemoryCollectives();
  SharedMemoryCollectives(const SharedMemoryCollectives&) = delete;
  SharedMemoryCollectives& operator=(const SharedMemoryCollectives&) = delete;

  // out = OP over ranks of in (kAvg arrives as kSum). in == out is fine.
  // Throws SharedMemoryFailure, as every operation below does.
  void run(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // out = root's in, `count` elements (in is read on the root only; in ==
  // out is fine).
  void broadcast(const void* in, void* out, size_t count, DataType type, int root);
  // out (size x count) = every rank's in, in rank order; in may be this
  // rank's block of out.
  void allgather(const void* in, void* out, size_t count, DataType type);
  // out (count) = OP over ranks of this rank's block of in (size x count);
  // out may be that block of in.
  void reduceScatter(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // Block r of out (size x count) = block `rank` of rank r's in; in == out
  // is fine.
  void alltoall(const void* in, void* out, size_t count, DataType type);
  // Returns once every rank has called it.
  void barrier();
  // data[i] = OP over ranks of data[i], where data is `count` elements at
  // byte `offset` of each rank's region of `regions`; kAvg divides by the
  // number of ranks. Every rank passes the same regions, offset and count.
  // Throws SharedMemoryFailure.
  void runInPlace(const SharedRegions& regions, size_t offset, size_t count, DataType type,
                  ReduceOp op);

  // Tells every rank waiting here, now or later, that this one gave up.
  void abort();

  // Whether this rank can read every peer's memory directly: false for a
  // peer in another pid namespace, or where the kernel or a container
  // forbids process_vm_readv. Call once every rank has attached.
  bool canReadEveryPeer() const;
  // From now on, allgather and alltoall blocks of at least `bytes` are
  // read from the peers' buffers directly (allreduces: below). Every rank calls it with the
  // same `bytes`, or none does.
  void readPeersDirectly(size_t bytes) { directFromBytes_ = bytes; }
  // From now on, allgathers whose output holds at least `bytes` go through
  // the slots (not read directly) and copy out of them with streaming
  // stores (copyPastTheCache). Every rank calls it with the same `bytes`,
  // or none does.
  void streamOutputsFrom(size_t bytes) { streamFromBytes_ = bytes; }
  // From now on, allreduces of at least `bytes` through the slots go by
  // shares (runByShares). Every rank calls it with the same `bytes`, or
  // none does.
  void reduceBySharesFrom(size_t bytes) { bySharesFromBytes_ = bytes; }
  // From now on, allreduces of [from, below) bytes read the peers' inputs
  // and shares directly (runDirect). Every rank calls it with the same
  // bounds, or none does.
  void reduceDirectlyBetween(size_t from, size_t below) { directAllreduce_ = {from, below}; }
  // From now on, allreduces of at least `bytes` that the band above does
  // not take go each by shares or with direct reads, whichever rank 0 timed
  // faster lately (FasterPath): by shares when one core's cache hands data
  // to another's fast, directly when it does not (docs/comm.md). Rank 0
  // writes the way of each such call into the segment's header as it
  // starts the one before, and every rank reads it there, so all take the
  // same. Every rank calls it with the same `bytes`, or none does; only
  // where canReadEveryPeer.
  void chooseAllreducePathFrom(size_t bytes) { choices_[kChosenAllreduce].fromBytes = bytes; }
  // The same for allgathers whose output holds at least `bytes` (and whose
  // blocks readPeersDirectly reads directly): through the slots with
  // streaming stores (streamOutputsFrom), or with direct reads.
  void chooseAllgatherPathFrom(size_t bytes) { choices_[kChosenAllgather].fromBytes = bytes; }
  // How many calls the two above sent each way (through the slots,
  // directly).
  std::pair<uint64_t, uint64_t> chosenAllreducePaths() const {
    return choices_[kChosenAllreduce].taken;
  }
  std::pair<uint64_t, uint64_t> chosenAllgatherPaths() const {
    return choices_[kChosenAllgather].taken;
  }
  // From now on, broadcasts of [from, below) bytes read the root's input
  // directly (broadcastDirect). Every rank calls it with the same bounds,
  // or none does.
  void broadcastDirectlyBetween(size_t from, size_t below) { directBroadcast_ = {from, below}; }
  // Takes the paths `options` asks for, from the sizes it gives: by shares
  // and with streaming stores through the slots, and, where
  // `peersReadable` (every rank's canReadEveryPeer held), the direct reads
  // and the timed choices between the two (the setters above, which tests
  // call one by one). Every rank calls it with the same arguments, or none
  // does.
  void usePaths(const SharedMemoryOptions& options, bool peersReadable);
  // How many CPUs the ranks may run on, all together (the union of their
  // affinity masks as each posted it on attaching; 0 where none could read
  // its own). Call once every rank has attached.
  int cpusOfEveryRank() const;
  // From now on, polls yield the CPU when there are more ranks than
  // cpusOfEveryRank(). Call once every rank has attached.
  void yieldIfOversubscribed();
  bool yieldsWhilePolling() const { return yieldWhilePolling_; }
  // One round of a wait's polling is over: yields the CPU when
  // yieldIfOversubscribed found more ranks than CPUs.
  void pollAgain() const {
    if (yieldWhilePolling_) ::sched_yield();
  }

  // For the point-to-point messages beside these collectives
  // (SharedMemoryMessages), which share their view of the peers: throws
  // SharedMemoryFailure when waiting on `peer` is no use (some rank gave
  // up, `peer` exited or left, or `deadline` passed).
  void checkPeer(int peer, std::chrono::steady_clock::time_point deadline) const;
  // Throws SharedMemoryFailure (kAborted) once some rank gave up (abort()).
  void throwIfAborted() const;
  // Copies `bytes` from `peer`'s address `from` (in its process) to `to`;
  // throws SharedMemoryFailure.
  void readFrom(int peer, uint64_t from, void* to, size_t bytes) const;
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  struct Header;
  struct RankLine;
  // What a rank posts it calls. The direct kinds and the allreduce by
  // shares are their own, so that ranks whose thresholds differ fail as a
  // mismatch rather than mix two paths.
  enum class Collective : uint32_t {
    kAllreduce,
    kBroadcast,
    kAllgather,
    kReduceScatter,
    kAlltoall,
    kBarrier,
    kAllreduceDirect,
    kAllgatherDirect,
    kAlltoallDirect,
    kBroadcastDirect,
    kAllreduceByShares,
  };
  // What a rank posts it is doing with a sequence number.
  struct Call {
    Collective collective;
    uint32_t regions;  // 0: through the slots; otherwise 1 + the regions' id
    uint32_t typeAndOp;
    int32_t root;     // broadcast's; 0 otherwise
    uint64_t offset;  // slots: the piece's first element; regions: bytes
    uint64_t count;   // elements in all (not just this piece), per rank

    bool operator==(const Call&) const = default;
  };

  static uint32_t typeAndOp(DataType type, ReduceOp op);  // as a Call holds them
  Header& header() const;
  RankLine& line(int rank) const;
  char* slot(uint32_t sequence, int rank) const;
  struct Pieces;
  template <typename Read>
  void throughSlots(const Pieces& pieces, Read read);
  uint32_t exchange(const void* piece, size_t bytes, const Call& call,
                    std::chrono::steady_clock::time_point deadline);
  void reduceSlots(uint32_t sequence, size_t at, void* result, size_t count, DataType type,
                   ReduceOp op) const;
  // into = OP over ranks r of operand(r), `n` elements: in rank order, the
  // one order every path takes, so that every rank and every path gives
  // the same bits.
  template <typename Operand>
  void reduceInRankOrder(ReduceKernel reduce, void* into, Operand operand, size_t n) const {
    reduce(into, operand(0), operand(1), n);
    for (int r = 2; r < size_; ++r) reduce(into, into, operand(r), n);
  }
  std::chrono::steady_clock::time_point startCall() const;
  void post(uint32_t sequence);
  void post(uint32_t sequence, const Call& call);
  void waitForAll(uint32_t sequence, std::chrono::steady_clock::time_point deadline) const;
  void checkCalls(uint32_t sequence) const;
  static std::string describe(const Call& call);
  // The kind through the slots that a direct kind reads another way; none
  // for a kind through the slots.
  static std::optional<Collective> slotsTwin(Collective kind);
  void reduceShare(const SharedRegions& regions, size_t offset, size_t count, DataType type,
                   ReduceOp op) const;
  void waitFor(int peer, uint32_t sequence, std::chrono::steady_clock::time_point deadline) const;
  bool exited(int peer) const;
  bool direct(size_t blockBytes) const { return blockBytes >= directFromBytes_; }
  // Posts `in` as this rank's input for a direct `kind` of `count`
  // elements per rank, waits for every rank's, and returns the sequence
  // (whose buffers are then readable).
  uint32_t postBuffer(Collective kind, const void* in, size_t count, DataType type, ReduceOp op,
                      int root, std::chrono::steady_clock::time_point deadline);
  // Posts `buffer` as this rank's address of a new sequence, waits for every
  // rank's, and returns the sequence.
  uint32_t postAddress(const void* buffer, std::chrono::steady_clock::time_point deadline);
  // The address `rank` posted with `sequence` (postBuffer, postAddress).
  uint64_t addressOf(int rank, uint32_t sequence) const;
  // Waits until every rank has read what it needed of the others' buffers.
  void finishReading(std::chrono::steady_clock::time_point deadline);
  // Elements [first, end) of `count`: rank `rank`'s share of a reduction
  // (whole cache lines; the last share shorter, some maybe empty).
  std::pair<size_t, size_t> shareOf(int rank, size_t count, size_t element) const;
  void runDirect(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // The calls whose way rank 0 chooses by time.
  enum ChosenKind : size_t { kChosenAllreduce, kChosenAllgather, kChosenKinds };
  struct Choice {
    size_t fromBytes = kNever;
    FasterPath faster{kProbeEvery};  // rank 0's
    uint64_t calls = 0;
    std::pair<uint64_t, uint64_t> taken;
  };
  // Runs a `kind` call of `bytes` through the slots or directly, as rank 0
  // chose; rank 0 times it for the choice of the next ones.
  template <typename ThroughSlots, typename Directly>
  void runChosen(ChosenKind kind, size_t bytes, ThroughSlots throughSlots, Directly directly);
  void allgatherThroughSlots(const void* in, void* out, size_t count, DataType type, bool streamed);
  void runByShares(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  void reduceShareOfSlots(uint32_t inputs, const char* piece, char* result, size_t first,
                          size_t end, DataType type, ReduceOp op) const;
  void reduceShareDirect(uint32_t inputs, const char* in, char* out, size_t first, size_t end,
                         DataType type, ReduceOp op);
  void allgatherDirect(const void* in, void* out, size_t count, DataType type);
  void alltoallDirect(const void* in, void* out, size_t count, DataType type);
  void broadcastDirect(const void* in, void* out, size_t count, DataType type, int root);

  static constexpr size_t kNever = static_cast<size_t>(-1);
  // The sizes [from, below) of a call that reads directly; none by default.
  struct Band {
    size_t from = kNever;
    size_t below = 0;
    bool holds(size_t bytes) const { return bytes > 0 && bytes >= from && bytes < below; }
  };
  // What a direct allreduce reads from a peer at a time (it stays in L2).
  static constexpr size_t kDirectChunk = 128 << 10;
  // What a rank reduces of its share before copying it out (it stays in
  // L1): runByShares and runInPlace.
  static constexpr size_t kReduceBlock = 16 << 10;
  // Of the calls chooseAllreducePathFrom and chooseAllgatherPathFrom take,
  // one in this many goes the way last timed slower, to see whether it
  // still is.
  static constexpr uint64_t kProbeEvery = 16;

  SharedSegment segment_;
  int rank_;
  int size_;
  size_t slotBytes_;
  std::chrono::milliseconds timeout_;
  uint32_t sequence_ = 0;
  size_t directFromBytes_ = kNever;
  Band directAllreduce_;
  size_t bySharesFromBytes_ = kNever;
  size_t streamFromBytes_ = kNever;
  Choice choices_[kChosenKinds];
  Band directBroadcast_;
  bool yieldWhilePolling_ = false;
  uint64_t probe_;             // a known word peers read to see that they can
  std::vector<char> scratch_;  // a direct allreduce's chunks of peers' inputs
};

}  // namespace distrun::comm
