#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "distrun/comm/dtype.h"

namespace gloo {
class Context;
}  // namespace gloo

namespace distrun::comm {

// How Gloo's collectives run on a mesh: GlooOptions' part for them, whose
// defaults are GlooOptions' (gloo_communicator.h says what each one is and
// where it was measured).
struct GlooMeshTuning {
  std::chrono::milliseconds timeout{};
  size_t bcubeBelowBytes = 0;
  size_t gatherBelowBytes = 0;
  int gatherMaxRanks = 0;
  size_t maxSegmentBytes = 0;
};

// Which algorithm an allreduce of `bytes` takes on a mesh of `meshSize`:
// "gather" (one allgather, each rank reducing in rank order) for small
// messages on few ranks, else "bcube" below tuning.bcubeBelowBytes, else
// "ring".
const char* allreduceAlgorithm(size_t bytes, int meshSize, const GlooMeshTuning& tuning);

// One Gloo mesh (every rank's, or the nodes' leaders') and Gloo's
// collectives on it. Each mesh counts its own tags, so one mesh's
// operations never match another's on the same device. What Gloo throws
// (gloo::Exception and its kinds) propagates: the communicator turns it into
// its errors, naming the peer. Used from one thread.
class GlooMesh {
 public:
  GlooMesh(std::shared_ptr<gloo::Context> context, GlooMeshTuning tuning);
  ~GlooMesh();
  GlooMesh(const GlooMesh&) = delete;
  GlooMesh& operator=(const GlooMesh&) = delete;

  int rank() const;
  int size() const;
  // For point-to-point: Gloo's unbound buffers are the context's.
  gloo::Context& context() { return *context_; }
  // Breaks every pair, so that a peer blocked on this rank fails at once.
  void closeConnections();

  // In place when in == out. Returns the algorithm it took (allreduceAlgorithm's).
  const char* allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  void broadcast(const void* in, void* out, size_t count, DataType type, int root);
  // `out` holds size() blocks of `count`; `in` may be this rank's block.
  void allgather(const void* in, void* out, size_t count, DataType type);
  // Mesh rank k gives counts[k] elements; `out` holds them all in mesh order.
  void allgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType type);
  // Block k of `in` (`count` elements) goes to mesh rank k; in == out allowed.
  void alltoall(const void* in, void* out, size_t count, DataType type);
  // Mesh rank k gets sendCounts[k] elements of `in` (in mesh order) and
  // gives recvCounts[k] of `out`.
  void alltoallv(const void* in, void* out, const std::vector<size_t>& sendCounts,
                 const std::vector<size_t>& recvCounts, DataType type);
  void barrier();

 private:
  void ringOrBcube(const void* in, void* out, size_t count, DataType type, ReduceOp op, bool bcube);
  void allreduceByGather(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // This mesh's next tag and the timeout, on any of Gloo's option sets.
  template <class Options>
  void stamp(Options& opts) {
    opts.setTag(tag_++);
    opts.setTimeout(tuning_.timeout);
  }

  std::shared_ptr<gloo::Context> context_;
  GlooMeshTuning tuning_;
  uint32_t tag_ = 0;
  std::vector<char> gathered_;  // allreduceByGather's inputs, reused
};

}  // namespace distrun::comm
