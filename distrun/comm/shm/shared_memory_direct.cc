// The shared-memory collectives that read the peers' buffers straight from
// their processes (SharedMemoryCollectives::readPeersDirectly,
// reduceDirectlyBetween and broadcastDirectlyBetween): allreduce and
// broadcast in a band of sizes, large allgather and alltoall blocks.
#include <algorithm>
#include <cstring>

#include "distrun/comm/reduce.h"
#include "distrun/comm/shm/shared_memory_collectives.h"

namespace distrun::comm {

// Allreduce with direct reads, in three arrivals: every rank posts its
// input; each reduces its own share of the elements over every rank's
// input (its own in place, the peers' read straight from their processes a
// chunk at a time, in rank order as reduceSlots does, so the bits are the
// slots') into its output, and posts its output; each then reads the other
// shares from the ranks that reduced them; the third arrival says every
// rank is done reading. Each rank reads the others' data once and copies
// nothing into a slot; in place or not, no rank writes what another still
// reads (a share's input is read only by the rank that reduces it, and
// outputs only once every rank has posted its own).
void SharedMemoryCollectives::runDirect(const void* in, void* out, size_t count, DataType type,
                                        ReduceOp op) {
  const auto deadline = startCall();
  const size_t element = sizeOf(type);
  const uint32_t inputs =
      postBuffer(Collective::kAllreduceDirect, in, count, type, op, 0, deadline);
  const auto [first, end] = shareOf(rank_, count, element);
  reduceShareDirect(inputs, static_cast<const char*>(in), static_cast<char*>(out), first, end, type,
                    op);
  const uint32_t outputs = postAddress(out, deadline);
  for (int r = 0; r < size_; ++r) {
    const auto [from, to] = shareOf(r, count, element);
    if (r == rank_ || from == to) continue;
    readFrom(r, addressOf(r, outputs) + from * element, static_cast<char*>(out) + from * element,
             (to - from) * element);
  }
  finishReading(deadline);
}

// Elements [first, end) of every rank's input of `inputs`, reduced in rank
// order into `out`: a chunk at a time, the peers' chunks read into
// scratch_, the partial results kept there and the last step written into
// `out`, so that an input in place (in == out) is read before it is
// written.
void SharedMemoryCollectives::reduceShareDirect(uint32_t inputs, const char* in, char* out,
                                                size_t first, size_t end, DataType type,
                                                ReduceOp op) {
  const size_t element = sizeOf(type);
  const ReduceKernel reduce = reduceKernel(type, op);
  const size_t perChunk = kDirectChunk / element;
  scratch_.resize(2 * kDirectChunk);
  char* partial = scratch_.data();
  char* peer = scratch_.data() + kDirectChunk;
  for (size_t at = first; at < end; at += perChunk) {
    const size_t n = std::min(perChunk, end - at);
    const size_t byte = at * element;
    auto operand = [&](int r, char* into) -> const char* {
      if (r == rank_) return in + byte;
      readFrom(r, addressOf(r, inputs) + byte, into, n * element);
      return into;
    };
    const char* sum = operand(0, partial);
    for (int r = 1; r < size_; ++r) {
      char* into = r == size_ - 1 ? out + byte : partial;
      reduce(into, sum, operand(r, peer), n);
      sum = into;
    }
  }
}

// Every rank's block straight from its input into this rank's output.
void SharedMemoryCollectives::allgatherDirect(const void* in, void* out, size_t count,
                                              DataType type) {
  const auto deadline = startCall();
  const size_t bytes = count * sizeOf(type);
  const uint32_t sequence =
      postBuffer(Collective::kAllgatherDirect, in, count, type, ReduceOp::kSum, 0, deadline);
  for (int r = 0; r < size_; ++r) {
    char* block = static_cast<char*>(out) + static_cast<size_t>(r) * bytes;
    if (r != rank_) {
      readFrom(r, addressOf(r, sequence), block, bytes);
    } else if (block != in) {
      std::memcpy(block, in, bytes);
    }
  }
  finishReading(deadline);
}

// Block `rank` of every rank's input straight into this rank's output (in
// is never out here: alltoall copies an in-place input aside first).
void SharedMemoryCollectives::alltoallDirect(const void* in, void* out, size_t count,
                                             DataType type) {
  const auto deadline = startCall();
  const size_t bytes = count * sizeOf(type);
  const size_t mine = bytes * static_cast<size_t>(rank_);
  const uint32_t sequence =
      postBuffer(Collective::kAlltoallDirect, in, count, type, ReduceOp::kSum, 0, deadline);
  for (int r = 0; r < size_; ++r) {
    char* block = static_cast<char*>(out) + static_cast<size_t>(r) * bytes;
    if (r != rank_) {
      readFrom(r, addressOf(r, sequence) + mine, block, bytes);
    } else {
      std::memcpy(block, static_cast<const char*>(in) + mine, bytes);
    }
  }
  finishReading(deadline);
}

// The root's input straight into every other rank's output: one copy
// where the slots take two (the root's into its slot, the others' out).
void SharedMemoryCollectives::broadcastDirect(const void* in, void* out, size_t count,
                                              DataType type, int root) {
  const auto deadline = startCall();
  const size_t bytes = count * sizeOf(type);
  const uint32_t sequence =
      postBuffer(Collective::kBroadcastDirect, in, count, type, ReduceOp::kSum, root, deadline);
  if (rank_ != root) {
    readFrom(root, addressOf(root, sequence), out, bytes);
  } else if (in != out) {
    std::memcpy(out, in, bytes);
  }
  finishReading(deadline);
}

}  // namespace distrun::comm
