#include "distrun/comm/gloo/gloo_mesh.h"

#include <string_view>
#include <type_traits>
#include <utility>

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>

#include "distrun/comm/reduce.h"

namespace distrun::comm {

namespace {

// Gloo sizes its unbound buffers and segments by the element type it is
// given; only the element's size matters, so one unsigned type per size.
template <class F>
void withElement(DataType type, F&& f) {
  switch (sizeOf(type)) {
    case 2:
      return f(static_cast<uint16_t*>(nullptr));
    case 4:
      return f(static_cast<uint32_t*>(nullptr));
    default:
      return f(static_cast<uint64_t*>(nullptr));
  }
}

template <class E>
E* mutableElements(const void* p) {
  return static_cast<E*>(const_cast<void*>(p));
}

}  // namespace

const char* allreduceAlgorithm(size_t bytes, int meshSize, const GlooMeshTuning& tuning) {
  if (bytes < tuning.gatherBelowBytes && meshSize > 1 && meshSize <= tuning.gatherMaxRanks) {
    return "gather";
  }
  return bytes < tuning.bcubeBelowBytes ? "bcube" : "ring";
}

GlooMesh::GlooMesh(std::shared_ptr<gloo::Context> context, GlooMeshTuning tuning)
    : context_(std::move(context)), tuning_(tuning) {}

GlooMesh::~GlooMesh() = default;

int GlooMesh::rank() const { return context_->rank; }
int GlooMesh::size() const { return context_->size; }

void GlooMesh::closeConnections() { context_->closeConnections(); }

const char* GlooMesh::allreduce(const void* in, void* out, size_t count, DataType type,
                                ReduceOp op) {
  const char* algorithm = allreduceAlgorithm(count * sizeOf(type), size(), tuning_);
  if (std::string_view(algorithm) == "gather") {
    allreduceByGather(in, out, count, type, op);
  } else {
    ringOrBcube(in, out, count, type, op, std::string_view(algorithm) == "bcube");
  }
  return algorithm;
}

void GlooMesh::ringOrBcube(const void* in, void* out, size_t count, DataType type, ReduceOp op,
                           bool bcube) {
  withElement(type, [&](auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    gloo::AllreduceOptions opts(context_);
    if (in != out) opts.setInput(mutableElements<E>(in), count);
    opts.setOutput(static_cast<E*>(out), count);
    opts.setReduceFunction(reduceKernel(type, op));
    opts.setAlgorithm(bcube ? gloo::AllreduceOptions::Algorithm::BCUBE
                            : gloo::AllreduceOptions::Algorithm::RING);
    opts.setMaxSegmentSize(tuning_.maxSegmentBytes);
    stamp(opts);
    gloo::allreduce(opts);
  });
}

// Every rank receives every input in one allgather (n-1 steps in one
// direction, where bcube exchanges 2 log2(n) times) and reduces them
// itself in rank order, so all ranks compute the same bits.
void GlooMesh::allreduceByGather(const void* in, void* out, size_t count, DataType type,
                                 ReduceOp op) {
  const size_t bytes = count * sizeOf(type);
  gathered_.resize(bytes * static_cast<size_t>(size()));
  allgather(in, gathered_.data(), count, type);
  const ReduceKernel reduce = reduceKernel(type, op);
  reduce(out, gathered_.data(), gathered_.data() + bytes, count);
  for (size_t r = 2; r < static_cast<size_t>(size()); ++r) {
    reduce(out, out, gathered_.data() + r * bytes, count);
  }
}

void GlooMesh::broadcast(const void* in, void* out, size_t count, DataType type, int root) {
  withElement(type, [&](auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    gloo::BroadcastOptions opts(context_);
    if (rank() == root && in != out) opts.setInput(mutableElements<E>(in), count);
    opts.setOutput(static_cast<E*>(out), count);
    opts.setRoot(root);
    stamp(opts);
    gloo::broadcast(opts);
  });
}

void GlooMesh::allgather(const void* in, void* out, size_t count, DataType type) {
  const size_t total = count * static_cast<size_t>(size());
  const auto* mine =
      static_cast<const char*>(out) + count * sizeOf(type) * static_cast<size_t>(rank());
  withElement(type, [&](auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    gloo::AllgatherOptions opts(context_);
    if (in != mine) opts.setInput(mutableElements<E>(in), count);
    opts.setOutput(static_cast<E*>(out), total);
    stamp(opts);
    gloo::allgather(opts);
  });
}

void GlooMesh::allgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                          DataType type) {
  withElement(type, [&](auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    gloo::AllgathervOptions opts(context_);
    opts.setInput(mutableElements<E>(in), counts[static_cast<size_t>(rank())]);
    opts.setOutput(static_cast<E*>(out), counts);
    stamp(opts);
    gloo::allgatherv(opts);
  });
}

void GlooMesh::alltoall(const void* in, void* out, size_t count, DataType type) {
  const size_t total = count * static_cast<size_t>(size());
  std::vector<char> copy;
  if (in == out) {  // Gloo's alltoall is out-of-place only
    copy.assign(static_cast<const char*>(in), static_cast<const char*>(in) + total * sizeOf(type));
    in = copy.data();
  }
  withElement(type, [&](auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    gloo::AlltoallOptions opts(context_);
    opts.setInput(mutableElements<E>(in), total);
    opts.setOutput(static_cast<E*>(out), total);
    stamp(opts);
    gloo::alltoall(opts);
  });
}

void GlooMesh::alltoallv(const void* in, void* out, const std::vector<size_t>& sendCounts,
                         const std::vector<size_t>& recvCounts, DataType type) {
  const std::vector<int64_t> sends(sendCounts.begin(), sendCounts.end());
  const std::vector<int64_t> recvs(recvCounts.begin(), recvCounts.end());
  withElement(type, [&](auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    gloo::AlltoallvOptions opts(context_);
    opts.setInput(mutableElements<E>(in), sends);
    opts.setOutput(static_cast<E*>(out), recvs);
    stamp(opts);
    gloo::alltoallv(opts);
  });
}

void GlooMesh::barrier() {
  gloo::BarrierOptions opts(context_);
  stamp(opts);
  gloo::barrier(opts);
}

}  // namespace distrun::comm
