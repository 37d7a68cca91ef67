// The shared-memory allreduces in which each rank reduces only its share
// of the elements (SharedMemoryCollectives): by shares through the slots
// (reduceBySharesFrom), and in place in reducible memory (runInPlace).
#include <algorithm>
#include <cstring>

#include "distrun/comm/reduce.h"
#include "distrun/comm/shm/shared_memory_collectives.h"
#include "distrun/comm/shm/shared_waiting.h"

namespace distrun::comm {

using namespace shm;  // kLine, roundUp

// Allreduce by shares (reduce-scatter, then allgather) through the slots,
// a piece at a time in two arrivals: each rank copies the other ranks'
// shares of its piece into its slot; once every rank has, each reduces its
// own share over every rank's (its own read from its input, in rank order,
// so the bits are run()'s) into its slot of the next sequence and copies
// it into its output; once every rank has, each copies the other shares
// out of their reducers' slots. A rank reduces 1/size of the elements
// instead of all of them. The second sequence's slots are free to write:
// every peer posted the first, so each finished reading the set's previous
// sequence before.
void SharedMemoryCollectives::runByShares(const void* in, void* out, size_t count, DataType type,
                                          ReduceOp op) {
  const auto deadline = startCall();
  const size_t element = sizeOf(type);
  const size_t perSlot = slotBytes_ / element;
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(perSlot, count - done);
    const char* piece = static_cast<const char*>(in) + done * element;
    char* result = static_cast<char*>(out) + done * element;
    const auto [first, end] = shareOf(rank_, n, element);
    const uint32_t inputs = ++sequence_;
    std::memcpy(slot(inputs, rank_), piece, first * element);
    std::memcpy(slot(inputs, rank_) + end * element, piece + end * element, (n - end) * element);
    post(inputs, Call{.collective = Collective::kAllreduceByShares,
                      .regions = 0,
                      .typeAndOp = typeAndOp(type, op),
                      .root = 0,
                      .offset = done,
                      .count = count});
    waitForAll(inputs, deadline);
    checkCalls(inputs);
    reduceShareOfSlots(inputs, piece, result, first, end, type, op);
    const uint32_t shares = ++sequence_;
    post(shares);
    waitForAll(shares, deadline);
    for (int r = 0; r < size_; ++r) {
      const auto [from, to] = shareOf(r, n, element);
      if (r == rank_ || from == to) continue;
      std::memcpy(result + from * element, slot(shares, r) + from * element, (to - from) * element);
    }
    done += n;
  }
}

// Elements [first, end) of every rank's piece of `inputs` (this rank's at
// `piece`, the others' in their slots), reduced in rank order a block at a
// time into this rank's slot of the next sequence, then copied into
// `result` (which may be `piece`: it is read before it is written).
void SharedMemoryCollectives::reduceShareOfSlots(uint32_t inputs, const char* piece, char* result,
                                                 size_t first, size_t end, DataType type,
                                                 ReduceOp op) const {
  const size_t element = sizeOf(type);
  const ReduceKernel reduce = reduceKernel(type, op);
  char* shared = slot(inputs + 1, rank_);
  const size_t perBlock = kReduceBlock / element;
  for (size_t at = first; at < end; at += perBlock) {
    const size_t n = std::min(perBlock, end - at);
    const size_t byte = at * element;
    reduceInRankOrder(
        reduce, shared + byte,
        [&](int r) { return r == rank_ ? piece + byte : slot(inputs, r) + byte; }, n);
    std::memcpy(result + byte, shared + byte, n * element);
  }
}

// Two arrivals: the first says this rank's data is final (every rank then
// reduces its share), the second that its share is written everywhere.
void SharedMemoryCollectives::runInPlace(const SharedRegions& regions, size_t offset, size_t count,
                                         DataType type, ReduceOp op) {
  const auto deadline = startCall();
  exchange(nullptr, 0,
           Call{.collective = Collective::kAllreduce,
                .regions = 1 + regions.id(),
                .typeAndOp = typeAndOp(type, op),
                .root = 0,
                .offset = offset,
                .count = count},
           deadline);
  reduceShare(regions, offset, count, type, op);
  const uint32_t written = ++sequence_;
  post(written);
  waitForAll(written, deadline);
}

std::pair<size_t, size_t> SharedMemoryCollectives::shareOf(int rank, size_t count,
                                                           size_t element) const {
  const size_t perLine = kLine / element;
  const auto ranks = static_cast<size_t>(size_);
  const size_t share = roundUp((count + ranks - 1) / ranks, perLine);
  const size_t first = std::min(count, share * static_cast<size_t>(rank));
  return {first, std::min(count, first + share)};
}

// This rank's share: a run of whole cache lines, the last share shorter.
// Reduced a block at a time, in rank order as run() does, into a buffer
// that stays in L1, then copied into every region.
void SharedMemoryCollectives::reduceShare(const SharedRegions& regions, size_t offset, size_t count,
                                          DataType type, ReduceOp op) const {
  const size_t element = sizeOf(type);
  const auto [first, end] = shareOf(rank_, count, element);
  const ReduceKernel reduce = reduceKernel(type, op);
  alignas(kLine) char block[kReduceBlock];
  const size_t perBlock = sizeof(block) / element;
  for (size_t at = first; at < end; at += perBlock) {
    const size_t n = std::min(perBlock, end - at);
    const size_t byte = offset + at * element;
    reduceInRankOrder(
        reduce, block, [&](int r) { return regions.region(r) + byte; }, n);
    if (op == ReduceOp::kAvg) divideInPlace(block, n, type, size_);
    for (int r = 0; r < size_; ++r) std::memcpy(regions.region(r) + byte, block, n * element);
  }
}

}  // namespace distrun::comm
