#include "distrun/comm/shm/shared_memory_collectives.h"

#include <sched.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "distrun/comm/reduce.h"
#include "distrun/comm/shm/shared_waiting.h"
#include "distrun/comm/shm/streaming_copy.h"
#include "distrun/common/system.h"

namespace distrun::comm {

using namespace shm;  // the waiting both kinds of shared-memory operation share

namespace {

constexpr uint64_t kMagic = 0x37766d6873727464;  // "dtrshmv7"
constexpr size_t kRankLine = 4 * kLine;          // what one rank writes

uint64_t pidNamespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

// A waiter counted among the sleepers of the line it waits on, while alive.
class Sleeper {
 public:
  explicit Sleeper(std::atomic<uint32_t>& sleepers) : sleepers_(sleepers) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
  }
  ~Sleeper() { sleepers_.fetch_sub(1, std::memory_order_relaxed); }
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;

 private:
  std::atomic<uint32_t>& sleepers_;
};

}  // namespace

struct SharedMemoryCollectives::Header {
  uint64_t magic;
  uint64_t slotBytes;
  int32_t ranks;
  std::atomic<uint32_t> abortedBy;  // 1 + the rank that gave up; 0: none
  // By kind (ChosenKind), the way of the calls whose way rank 0 chooses, by
  // the parity of their count: 0 through the slots, 1 with direct reads
  // (runChosen).
  std::atomic<uint32_t> ways[kChosenKinds][2];
};

struct SharedMemoryCollectives::RankLine {
  std::atomic<uint32_t> posted;    // the last sequence whose input is in place
  std::atomic<uint32_t> left;      // 1 once the rank closed its communicator
  std::atomic<uint32_t> sleepers;  // peers that may be in futexWait on `posted`
  int32_t pid;
  uint64_t pidNamespace;
  Call calls[2];        // by sequence parity, like the slots
  uint64_t buffers[2];  // a direct call's input, in the rank's process
  uint64_t probe;       // where the rank's probe_ is
  cpu_set_t cpus;       // the CPUs it may run on (its affinity mask)
};

size_t SharedMemoryCollectives::segmentBytes(int size, size_t slotBytes) {
  const auto ranks = static_cast<size_t>(size);
  return kLine + kRankLine * ranks + 2 * ranks * roundUp(slotBytes, kLine);
}

void SharedMemoryCollectives::format(SharedSegment& segment, int size, size_t slotBytes) {
  auto* header = new (segment.data()) Header{};
  header->magic = kMagic;
  header->slotBytes = slotBytes;
  header->ranks = size;
  for (int r = 0; r < size; ++r) {
    new (segment.data() + kLine + kRankLine * static_cast<size_t>(r)) RankLine{};
  }
}

SharedMemoryCollectives::SharedMemoryCollectives(SharedSegment segment, int rank, int size,
                                                 size_t slotBytes,
                                                 std::chrono::milliseconds timeout)
    : segment_(std::move(segment)),
      rank_(rank),
      size_(size),
      slotBytes_(roundUp(slotBytes, kLine)),
      timeout_(timeout),
      probe_(kMagic) {
  static_assert(sizeof(RankLine) <= kRankLine, "a rank's line fits its place");
  static_assert(sizeof(Header) <= kLine, "the header fits its line");
  if (size < 2) throw std::runtime_error("shared-memory collectives need 2 or more ranks");
  const Header& h = header();
  if (segment_.size() < segmentBytes(size, slotBytes) || h.magic != kMagic || h.ranks != size ||
      h.slotBytes != slotBytes) {
    throw std::runtime_error(
        fmt::format("the segment is not laid out for {} ranks of {}-byte slots", size, slotBytes));
  }
  line(rank).pid = static_cast<int32_t>(::getpid());
  line(rank).pidNamespace = pidNamespace();
  line(rank).probe = reinterpret_cast<uint64_t>(&probe_);
  // On failure none (the line is zero-filled): never oversubscribed.
  ::sched_getaffinity(0, sizeof(cpu_set_t), &line(rank).cpus);
}

SharedMemoryCollectives::~SharedMemoryCollectives() {
  line(rank_).left.store(1, std::memory_order_release);
  futexWakeAll(line(rank_).posted);
}

SharedMemoryCollectives::Header& SharedMemoryCollectives::header() const {
  return *std::launder(reinterpret_cast<Header*>(segment_.data()));
}

SharedMemoryCollectives::RankLine& SharedMemoryCollectives::line(int rank) const {
  return *std::launder(
      reinterpret_cast<RankLine*>(segment_.data() + kLine + kRankLine * static_cast<size_t>(rank)));
}

uint32_t SharedMemoryCollectives::typeAndOp(DataType type, ReduceOp op) {
  return static_cast<uint32_t>(type) << 8 | static_cast<uint32_t>(op);
}

char* SharedMemoryCollectives::slot(uint32_t sequence, int rank) const {
  const size_t set = sequence & 1u;
  const auto ranks = static_cast<size_t>(size_);
  return segment_.data() + kLine + kRankLine * ranks +
         (set * ranks + static_cast<size_t>(rank)) * slotBytes_;
}

std::chrono::steady_clock::time_point SharedMemoryCollectives::startCall() const {
  throwIfAborted();
  return std::chrono::steady_clock::now() + timeout_;
}

// One piece of a collective: this rank's `bytes` at `piece` go into its
// slot of a new sequence, and once every rank has posted the same call,
// every slot of that sequence can be read. Returns the sequence.
uint32_t SharedMemoryCollectives::exchange(const void* piece, size_t bytes, const Call& call,
                                           std::chrono::steady_clock::time_point deadline) {
  const uint32_t sequence = ++sequence_;
  if (bytes > 0) std::memcpy(slot(sequence, rank_), piece, bytes);
  post(sequence, call);
  waitForAll(sequence, deadline);
  checkCalls(sequence);
  return sequence;
}

// result = OP over ranks of the `count` elements at byte `at` of each
// rank's slot of `sequence`, in rank order.
void SharedMemoryCollectives::reduceSlots(uint32_t sequence, size_t at, void* result, size_t count,
                                          DataType type, ReduceOp op) const {
  reduceInRankOrder(
      reduceKernel(type, op), result, [&](int r) { return slot(sequence, r) + at; }, count);
}

// A collective through the slots, in pieces of at most a slot: `total`
// elements of `type` from `in` (this rank's whole input; none unless
// `sends`), posted as `kind` of `count` elements per rank.
struct SharedMemoryCollectives::Pieces {
  Collective kind;
  const void* in;
  bool sends;
  size_t total;
  size_t count;
  DataType type;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
};

// Exchanges each piece, then calls read(sequence, done, n) for the piece of
// `n` elements at element `done`, whose slots are then every rank's.
template <typename Read>
void SharedMemoryCollectives::throughSlots(const Pieces& p, Read read) {
  const auto deadline = startCall();
  const size_t element = sizeOf(p.type);
  const size_t perSlot = slotBytes_ / element;
  for (size_t done = 0; done < p.total;) {
    const size_t n = std::min(perSlot, p.total - done);
    const Call call{.collective = p.kind,
                    .regions = 0,
                    .typeAndOp = typeAndOp(p.type, p.op),
                    .root = p.root,
                    .offset = done,
                    .count = p.count};
    const char* piece = p.sends ? static_cast<const char*>(p.in) + done * element : nullptr;
    read(exchange(piece, p.sends ? n * element : 0, call, deadline), done, n);
    done += n;
  }
}

void SharedMemoryCollectives::run(const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op) {
  const size_t element = sizeOf(type);
  const size_t bytes = count * element;
  if (directAllreduce_.holds(bytes)) return runDirect(in, out, count, type, op);
  if (bytes >= choices_[kChosenAllreduce].fromBytes) {
    return runChosen(
        kChosenAllreduce, bytes, [&] { runByShares(in, out, count, type, op); },
        [&] { runDirect(in, out, count, type, op); });
  }
  if (bytes >= bySharesFromBytes_) return runByShares(in, out, count, type, op);
  throughSlots({Collective::kAllreduce, in, true, count, count, type, op},
               [&](uint32_t sequence, size_t done, size_t n) {
                 reduceSlots(sequence, 0, static_cast<char*>(out) + done * element, n, type, op);
               });
}

// The way of a kind's call k is in ways[kind][k % 2]. Rank 0 writes it as
// it starts call k - 1, before that call's first arrival, which every rank
// waits for before it starts call k and reads it; and it overwrites the
// way of call k - 2, which every rank read before it posted that call's
// first arrival, which rank 0 waited for. So every rank takes the same way.
template <typename ThroughSlots, typename Directly>
void SharedMemoryCollectives::runChosen(ChosenKind kind, size_t bytes, ThroughSlots throughSlots,
                                        Directly directly) {
  Choice& choice = choices_[kind];
  const uint64_t call = choice.calls++;
  std::atomic<uint32_t>* ways = header().ways[kind];
  if (rank_ == 0) {
    ways[(call + 1) % 2].store(static_cast<uint32_t>(choice.faster.next()),
                               std::memory_order_relaxed);
  }
  const uint32_t way = ways[call % 2].load(std::memory_order_relaxed);
  const auto start = std::chrono::steady_clock::now();
  if (way == 1) {
    directly();
    ++choice.taken.second;
  } else {
    throughSlots();
    ++choice.taken.first;
  }
  if (rank_ != 0) return;
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  choice.faster.took(static_cast<int>(way), bytes, took.count());
}

void SharedMemoryCollectives::broadcast(const void* in, void* out, size_t count, DataType type,
                                        int root) {
  const size_t element = sizeOf(type);
  const bool sending = rank_ == root;
  if (directBroadcast_.holds(count * element)) return broadcastDirect(in, out, count, type, root);
  throughSlots({Collective::kBroadcast, in, sending, count, count, type, ReduceOp::kSum, root},
               [&](uint32_t sequence, size_t done, size_t n) {
                 if (sending && in == out) return;
                 std::memcpy(static_cast<char*>(out) + done * element, slot(sequence, root),
                             n * element);
               });
}

// A large output (streamOutputsFrom) goes through the slots with
// streaming stores; from chooseAllgatherPathFrom, so or with direct reads,
// whichever was faster lately (docs/comm.md).
void SharedMemoryCollectives::allgather(const void* in, void* out, size_t count, DataType type) {
  const size_t element = sizeOf(type);
  const size_t output = count * element * static_cast<size_t>(size_);
  if (output >= streamFromBytes_) return allgatherThroughSlots(in, out, count, type, true);
  if (!direct(count * element)) return allgatherThroughSlots(in, out, count, type, false);
  if (output < choices_[kChosenAllgather].fromBytes) return allgatherDirect(in, out, count, type);
  runChosen(
      kChosenAllgather, output, [&] { allgatherThroughSlots(in, out, count, type, true); },
      [&] { allgatherDirect(in, out, count, type); });
}

void SharedMemoryCollectives::allgatherThroughSlots(const void* in, void* out, size_t count,
                                                    DataType type, bool streamed) {
  const size_t element = sizeOf(type);
  const auto copy = streamed ? copyPastTheCache : [](void* to, const void* from, size_t bytes) {
    std::memcpy(to, from, bytes);
  };
  throughSlots({Collective::kAllgather, in, true, count, count, type},
               [&](uint32_t sequence, size_t done, size_t n) {
                 for (int r = 0; r < size_; ++r) {
                   char* block = static_cast<char*>(out) + static_cast<size_t>(r) * count * element;
                   copy(block + done * element, slot(sequence, r), n * element);
                 }
               });
  if (streamed) finishCopiesPastTheCache();
}

// Pieces of the whole input (size x count); of each, a rank reduces only
// what falls in its own block. Written in place, a piece's part of the
// block is already in the slots.
void SharedMemoryCollectives::reduceScatter(const void* in, void* out, size_t count, DataType type,
                                            ReduceOp op) {
  const size_t element = sizeOf(type);
  const size_t mine = count * static_cast<size_t>(rank_);
  throughSlots(
      {Collective::kReduceScatter, in, true, count * static_cast<size_t>(size_), count, type, op},
      [&](uint32_t sequence, size_t done, size_t n) {
        const size_t first = std::max(done, mine);
        const size_t end = std::min(done + n, mine + count);
        if (first >= end) return;
        reduceSlots(sequence, (first - done) * element,
                    static_cast<char*>(out) + (first - mine) * element, end - first, type, op);
      });
}

// Pieces of the whole input (size x count); of each, a rank copies out
// what falls in its own block of every rank's input. In place, an input
// larger than a slot is copied first: a piece would overwrite input that
// a later piece still has to send.
void SharedMemoryCollectives::alltoall(const void* in, void* out, size_t count, DataType type) {
  const size_t element = sizeOf(type);
  const size_t total = count * static_cast<size_t>(size_);
  const size_t mine = count * static_cast<size_t>(rank_);
  std::vector<char> copy;
  if (in == out && (total * element > slotBytes_ || direct(count * element))) {
    copy.assign(static_cast<const char*>(in), static_cast<const char*>(in) + total * element);
    in = copy.data();
  }
  if (direct(count * element)) return alltoallDirect(in, out, count, type);
  throughSlots({Collective::kAlltoall, in, true, total, count, type}, [&](uint32_t sequence,
                                                                          size_t done, size_t n) {
    const size_t first = std::max(done, mine);
    const size_t end = std::min(done + n, mine + count);
    for (int r = 0; first < end && r < size_; ++r) {
      char* block = static_cast<char*>(out) + static_cast<size_t>(r) * count * element;
      std::memcpy(block + (first - mine) * element, slot(sequence, r) + (first - done) * element,
                  (end - first) * element);
    }
  });
}

void SharedMemoryCollectives::barrier() {
  exchange(nullptr, 0,
           Call{.collective = Collective::kBarrier,
                .regions = 0,
                .typeAndOp = 0,
                .root = 0,
                .offset = 0,
                .count = 0},
           startCall());
}

// The slots and calls of `sequence` - 2 share this set; every peer has
// posted `sequence` - 1, so each finished reading them before.
void SharedMemoryCollectives::post(uint32_t sequence, const Call& call) {
  line(rank_).calls[sequence & 1u] = call;
  post(sequence);
}

void SharedMemoryCollectives::post(uint32_t sequence) {
  // A wake-up is a system call (a third of a 4 KB allreduce here): only
  // for a line a peer may sleep on. Sequentially consistent with waitFor's
  // count and look, so that either this sees the sleeper or it sees the post.
  RankLine& mine = line(rank_);
  mine.posted.store(sequence, std::memory_order_seq_cst);
  if (mine.sleepers.load(std::memory_order_seq_cst) != 0) futexWakeAll(mine.posted);
}

void SharedMemoryCollectives::waitForAll(uint32_t sequence,
                                         std::chrono::steady_clock::time_point deadline) const {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) waitFor(r, sequence, deadline);
  }
}

void SharedMemoryCollectives::checkCalls(uint32_t sequence) const {
  const Call& mine = line(rank_).calls[sequence & 1u];
  for (int r = 0; r < size_; ++r) {
    const Call& theirs = line(r).calls[sequence & 1u];
    if (theirs == mine) continue;
    throw SharedMemoryFailure(SharedMemoryFailure::Kind::kMismatch, r,
                              fmt::format("rank {} called {} where this rank called {}", r,
                                          describe(theirs), describe(mine)));
  }
}

std::optional<SharedMemoryCollectives::Collective> SharedMemoryCollectives::slotsTwin(
    Collective kind) {
  switch (kind) {
    case Collective::kAllreduceDirect:
    case Collective::kAllreduceByShares:
      return Collective::kAllreduce;
    case Collective::kBroadcastDirect:
      return Collective::kBroadcast;
    case Collective::kAllgatherDirect:
      return Collective::kAllgather;
    case Collective::kAlltoallDirect:
      return Collective::kAlltoall;
    default:
      return std::nullopt;
  }
}

std::string SharedMemoryCollectives::describe(const Call& call) {
  // A direct call reads as its twin through the slots, ", read directly"
  // added (", by shares" for an allreduce by shares).
  if (const std::optional<Collective> twin = slotsTwin(call.collective)) {
    Call slots = call;
    slots.collective = *twin;
    std::string what = describe(slots);
    return what.insert(what.size() - 1, call.collective == Collective::kAllreduceByShares
                                            ? ", by shares"
                                            : ", read directly");
  }
  const auto type = static_cast<DataType>(call.typeAndOp >> 8);
  const auto op = static_cast<ReduceOp>(call.typeAndOp & 0xff);
  switch (call.collective) {
    case Collective::kAllreduce:
      break;
    case Collective::kBroadcast:
      return fmt::format("broadcast({} x {}, root {})", call.count, nameOf(type), call.root);
    case Collective::kAllgather:
      return fmt::format("allgather({} x {})", call.count, nameOf(type));
    case Collective::kReduceScatter:
      return fmt::format("reduce_scatter({}, {} x {})", nameOf(op), call.count, nameOf(type));
    case Collective::kAlltoall:
      return fmt::format("alltoall({} x {})", call.count, nameOf(type));
    case Collective::kBarrier:
      return "barrier()";
    case Collective::kAllreduceDirect:  // the direct kinds: described above
    case Collective::kAllreduceByShares:
    case Collective::kBroadcastDirect:
    case Collective::kAllgatherDirect:
    case Collective::kAlltoallDirect:
      break;
  }
  const std::string what =
      fmt::format("allreduce({}, {} x {}", nameOf(op), call.count, nameOf(type));
  if (call.regions == 0) return what + ")";
  return fmt::format("{}, in place at byte {} of shared buffer {})", what, call.offset,
                     call.regions - 1);
}

void SharedMemoryCollectives::waitFor(int peer, uint32_t sequence,
                                      std::chrono::steady_clock::time_point deadline) const {
  std::atomic<uint32_t>& word = line(peer).posted;
  const auto spinUntil = std::chrono::steady_clock::now() + kSpin;
  for (unsigned i = 0;; ++i) {
    if (reached(word.load(std::memory_order_acquire), sequence)) return;
    pollAgain();
    if (i % 64 == 63 && std::chrono::steady_clock::now() > spinUntil) break;
  }
  // Counted among the line's sleepers before the last look at `word`
  // (post() wakes only a line that has some).
  const Sleeper asleep(line(peer).sleepers);
  for (;;) {
    const uint32_t seen = word.load(std::memory_order_seq_cst);
    if (reached(seen, sequence)) return;
    try {
      checkPeer(peer, deadline);
    } catch (const SharedMemoryFailure& f) {
      // It may have posted and then left since the load above: what it
      // posted stays readable (it stored `left` after it).
      if (f.kind == SharedMemoryFailure::Kind::kPeerExited &&
          reached(word.load(std::memory_order_acquire), sequence)) {
        return;
      }
      throw;
    }
    const auto left = deadline - std::chrono::steady_clock::now();
    futexWait(word, seen, std::clamp<std::chrono::nanoseconds>(left, {}, kCheckEvery));
  }
}

void SharedMemoryCollectives::checkPeer(int peer,
                                        std::chrono::steady_clock::time_point deadline) const {
  throwIfAborted();
  if (exited(peer)) {
    throw SharedMemoryFailure(SharedMemoryFailure::Kind::kPeerExited, peer,
                              fmt::format("rank {} exited", peer));
  }
  if (std::chrono::steady_clock::now() >= deadline) {
    throw SharedMemoryFailure(SharedMemoryFailure::Kind::kTimedOut, peer,
                              fmt::format("rank {} did not arrive", peer));
  }
}

void SharedMemoryCollectives::throwIfAborted() const {
  const uint32_t by = header().abortedBy.load(std::memory_order_acquire);
  if (by == 0) return;
  const int peer = static_cast<int>(by) - 1;
  throw SharedMemoryFailure(SharedMemoryFailure::Kind::kAborted, peer,
                            fmt::format("rank {} gave up", peer));
}

// Only a peer in this pid namespace can be looked up by its pid.
bool SharedMemoryCollectives::exited(int peer) const {
  const RankLine& other = line(peer);
  if (other.left.load(std::memory_order_acquire) != 0) return true;
  if (other.pid == 0 || other.pidNamespace != line(rank_).pidNamespace) return false;
  return processExited(other.pid);
}

void SharedMemoryCollectives::abort() {
  uint32_t none = 0;
  header().abortedBy.compare_exchange_strong(none, static_cast<uint32_t>(rank_ + 1));
  for (int r = 0; r < size_; ++r) futexWakeAll(line(r).posted);
}

uint32_t SharedMemoryCollectives::postBuffer(Collective kind, const void* in, size_t count,
                                             DataType type, ReduceOp op, int root,
                                             std::chrono::steady_clock::time_point deadline) {
  const uint32_t sequence = ++sequence_;
  line(rank_).buffers[sequence & 1u] = reinterpret_cast<uint64_t>(in);
  post(sequence, Call{.collective = kind,
                      .regions = 0,
                      .typeAndOp = typeAndOp(type, op),
                      .root = root,
                      .offset = 0,
                      .count = count});
  waitForAll(sequence, deadline);
  checkCalls(sequence);
  return sequence;
}

uint32_t SharedMemoryCollectives::postAddress(const void* buffer,
                                              std::chrono::steady_clock::time_point deadline) {
  const uint32_t sequence = ++sequence_;
  line(rank_).buffers[sequence & 1u] = reinterpret_cast<uint64_t>(buffer);
  post(sequence);
  waitForAll(sequence, deadline);
  return sequence;
}

uint64_t SharedMemoryCollectives::addressOf(int rank, uint32_t sequence) const {
  return line(rank).buffers[sequence & 1u];
}

void SharedMemoryCollectives::finishReading(std::chrono::steady_clock::time_point deadline) {
  const uint32_t done = ++sequence_;
  post(done);
  waitForAll(done, deadline);
}

void SharedMemoryCollectives::readFrom(int peer, uint64_t from, void* to, size_t bytes) const {
  const pid_t pid = line(peer).pid;
  for (size_t done = 0; done < bytes;) {
    iovec local{static_cast<char*>(to) + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(from + done), bytes - done};
    const ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    if (got < 0 && errno == ESRCH) {
      throw SharedMemoryFailure(SharedMemoryFailure::Kind::kPeerExited, peer,
                                fmt::format("rank {} exited", peer));
    }
    throw SharedMemoryFailure(
        SharedMemoryFailure::Kind::kUnreadable, peer,
        fmt::format("cannot read rank {}'s buffer directly (process_vm_readv: {})", peer,
                    got < 0 ? std::strerror(errno) : "nothing read"));
  }
}

int SharedMemoryCollectives::cpusOfEveryRank() const {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int r = 0; r < size_; ++r) CPU_OR(&all, &all, &line(r).cpus);
  return CPU_COUNT(&all);
}

void SharedMemoryCollectives::yieldIfOversubscribed() {
  const int cpus = cpusOfEveryRank();
  yieldWhilePolling_ = cpus > 0 && size_ > cpus;
}

void SharedMemoryCollectives::usePaths(const SharedMemoryOptions& options, bool peersReadable) {
  reduceBySharesFrom(options.sharedAllreduceSharesFromBytes);
  streamOutputsFrom(options.sharedStreamingFromBytes);
  if (!peersReadable) return;
  readPeersDirectly(options.sharedDirectFromBytes);
  reduceDirectlyBetween(options.sharedDirectAllreduceFromBytes,
                        options.sharedDirectAllreduceBelowBytes);
  chooseAllreducePathFrom(options.sharedAllreduceChoiceFromBytes);
  chooseAllgatherPathFrom(options.sharedAllgatherChoiceFromBytes);
  broadcastDirectlyBetween(options.sharedDirectBroadcastFromBytes,
                           options.sharedDirectBroadcastBelowBytes);
}

bool SharedMemoryCollectives::canReadEveryPeer() const {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const RankLine& peer = line(r);
    if (peer.pidNamespace != line(rank_).pidNamespace) return false;
    uint64_t word = 0;
    iovec local{&word, sizeof(word)};
    iovec remote{reinterpret_cast<void*>(peer.probe), sizeof(word)};
    if (::process_vm_readv(peer.pid, &local, 1, &remote, 1, 0) != sizeof(word)) return false;
    if (word != kMagic) return false;
  }
  return true;
}

}  // namespace distrun::comm
