#include "distrun/comm/communicator.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <new>

#include <fmt/format.h>

#include "distrun/comm/reduce.h"
#include "distrun/common/error.h"

namespace distrun::comm {

namespace {

// Bytes of `count` elements, times `blocks`; refuses sizes that overflow.
size_t bytesOf(size_t count, DataType type, int blocks, std::string_view op) {
  const size_t per = sizeOf(type) * static_cast<size_t>(blocks);
  if (count > std::numeric_limits<size_t>::max() / per) {
    throw UsageError(
        fmt::format("{}: count {} of {} overflows the address space", op, count, nameOf(type)));
  }
  return count * per;
}

void requirePointer(const void* p, std::string_view op, std::string_view name) {
  if (p == nullptr) {
    throw UsageError(fmt::format("{}: {} is null but count is not 0", op, name));
  }
}

// Out-of-place buffers must not overlap; identical pointers are in-place.
void requireDisjoint(const void* a, size_t aBytes, const void* b, size_t bBytes,
                     std::string_view op) {
  auto x = reinterpret_cast<uintptr_t>(a);
  auto y = reinterpret_cast<uintptr_t>(b);
  if (x < y + bBytes && y < x + aBytes) {
    throw UsageError(
        fmt::format("{}: input and output overlap without being in-place (pass the "
                    "in-place position exactly, see communicator.h)",
                    op));
  }
}

void requireRank(int r, int size, std::string_view op, std::string_view what) {
  if (r < 0 || r >= size) {
    throw UsageError(
        fmt::format("{}: {} {} is not a rank of this world (0..{})", op, what, r, size - 1));
  }
}

void requirePeer(int peer, int rank, int size, int tag, std::string_view op) {
  requireRank(peer, size, op, "peer");
  if (peer == rank) {
    throw UsageError(fmt::format("{}: peer {} is this rank itself", op, peer));
  }
  if (tag < 0) throw UsageError(fmt::format("{}: tag {} is negative", op, tag));
}

// Communicators of this process in creation order (the trace's "comm").
std::atomic<int> nextCommunicatorNumber{0};

}  // namespace

Communicator::Communicator(int rank, int size)
    : rank_(rank), size_(size), number_(nextCommunicatorNumber++) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw UsageError(fmt::format(
        "communicator: rank {} of world size {} (expected 0 <= rank < size)", rank, size));
  }
}

Communicator::~Communicator() { shutdown(); }

void Communicator::shutdown() { queue_.reset(); }

Communicator::Task Communicator::makeAllreduce(const void* in, void* out, size_t count,
                                               DataType type, ReduceOp op) {
  const size_t bytes = bytesOf(count, type, 1, "allreduce");
  if (count == 0) return {};
  requirePointer(in, "allreduce", "input");
  requirePointer(out, "allreduce", "output");
  if (in != out) requireDisjoint(in, bytes, out, bytes, "allreduce");
  return [=, this] {
    if (in == out && doAllreduceInPlace(out, count, type, op)) return;
    const bool divide = op == ReduceOp::kAvg && !averagesNatively();
    doAllreduce(in, out, count, type, divide ? ReduceOp::kSum : op);
    if (divide) divideInPlace(out, count, type, size_);
  };
}

Communicator::Task Communicator::makeBroadcast(const void* in, void* out, size_t count,
                                               DataType type, int root) {
  requireRank(root, size_, "broadcast", "root");
  const size_t bytes = bytesOf(count, type, 1, "broadcast");
  if (count == 0) return {};
  requirePointer(out, "broadcast", "output");
  if (rank_ == root) {
    requirePointer(in, "broadcast", "input");
    if (in != out) requireDisjoint(in, bytes, out, bytes, "broadcast");
  }
  return [=, this] { doBroadcast(in, out, count, type, root); };
}

Communicator::Task Communicator::makeAllgather(const void* in, void* out, size_t count,
                                               DataType type) {
  const size_t total = bytesOf(count, type, size_, "allgather");
  if (count == 0) return {};
  requirePointer(in, "allgather", "input");
  requirePointer(out, "allgather", "output");
  const size_t block = total / static_cast<size_t>(size_);
  const auto* mine = static_cast<const char*>(out) + block * static_cast<size_t>(rank_);
  if (in != mine) requireDisjoint(in, block, out, total, "allgather");
  return [=, this] { doAllgather(in, out, count, type); };
}

Communicator::Task Communicator::makeReduceScatter(const void* in, void* out, size_t count,
                                                   DataType type, ReduceOp op) {
  const size_t total = bytesOf(count, type, size_, "reduce_scatter");
  if (count == 0) return {};
  requirePointer(in, "reduce_scatter", "input");
  requirePointer(out, "reduce_scatter", "output");
  const size_t block = total / static_cast<size_t>(size_);
  const auto* mine = static_cast<const char*>(in) + block * static_cast<size_t>(rank_);
  if (out != mine) requireDisjoint(in, total, out, block, "reduce_scatter");
  return [=, this] {
    const bool divide = op == ReduceOp::kAvg && !averagesNatively();
    doReduceScatter(in, out, count, type, divide ? ReduceOp::kSum : op);
    if (divide) divideInPlace(out, count, type, size_);
  };
}

Communicator::Task Communicator::makeAlltoall(const void* in, void* out, size_t count,
                                              DataType type) {
  const size_t total = bytesOf(count, type, size_, "alltoall");
  if (count == 0) return {};
  requirePointer(in, "alltoall", "input");
  requirePointer(out, "alltoall", "output");
  if (in != out) requireDisjoint(in, total, out, total, "alltoall");
  return [=, this] { doAlltoall(in, out, count, type); };
}

Communicator::Task Communicator::makeSend(const void* data, size_t count, DataType type, int peer,
                                          int tag) {
  requirePeer(peer, rank_, size_, tag, "send");
  bytesOf(count, type, 1, "send");
  if (count == 0) return {};
  requirePointer(data, "send", "data");
  return [=, this] { doSend(data, count, type, peer, tag); };
}

Communicator::Task Communicator::makeRecv(void* data, size_t count, DataType type, int peer,
                                          int tag) {
  requirePeer(peer, rank_, size_, tag, "recv");
  bytesOf(count, type, 1, "recv");
  if (count == 0) return {};
  requirePointer(data, "recv", "data");
  return [=, this] { doRecv(data, count, type, peer, tag); };
}

Communicator::Task Communicator::makeSendRecv(const void* sendData, int sendPeer, void* recvData,
                                              int recvPeer, size_t count, DataType type, int tag) {
  requirePeer(sendPeer, rank_, size_, tag, "sendrecv");
  requirePeer(recvPeer, rank_, size_, tag, "sendrecv");
  const size_t bytes = bytesOf(count, type, 1, "sendrecv");
  if (count == 0) return {};
  requirePointer(sendData, "sendrecv", "send data");
  requirePointer(recvData, "sendrecv", "receive data");
  requireDisjoint(sendData, bytes, recvData, bytes, "sendrecv");
  return [=, this] { doSendRecv(sendData, sendPeer, recvData, recvPeer, count, type, tag); };
}

bool Communicator::doAllreduceInPlace(void* /*data*/, size_t /*count*/, DataType /*type*/,
                                      ReduceOp /*op*/) {
  return false;
}

std::shared_ptr<void> Communicator::doAllocateReducible(size_t bytes) {
  constexpr size_t kAlign = 64;
  void* p = ::operator new (std::max<size_t>(bytes, 1), std::align_val_t{kAlign});
  return std::shared_ptr<void>(p, [](void* q) { ::operator delete (q, std::align_val_t{kAlign}); });
}

std::shared_ptr<void> Communicator::allocateReducible(size_t bytes) {
  std::shared_ptr<void> memory;
  runNow([&] { memory = doAllocateReducible(bytes); });
  return memory;
}

void Communicator::runGuarded(const Task& task) {
  {
    std::lock_guard lock(errorMutex_);
    if (firstError_) std::rethrow_exception(firstError_);
  }
  try {
    task();
  } catch (...) {
    std::lock_guard lock(errorMutex_);
    if (!firstError_) firstError_ = std::current_exception();
    throw;
  }
}

void Communicator::runNow(const Task& task) {
  if (queue_) queue_->drain();
  if (task) runGuarded(task);
}

Work Communicator::runLater(Task task) {
  if (!task) return Work();
  if (!supportsBackgroundThread()) {
    runNow(task);
    return Work();
  }
  if (!queue_) queue_ = std::make_unique<WorkQueue>();
  return queue_->submit([this, task = std::move(task)] { runGuarded(task); });
}

size_t Communicator::bytesOfCount(size_t count, DataType type, int blocks) {
  return count * sizeOf(type) * static_cast<size_t>(blocks);
}

void Communicator::allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) {
  runNow(traced(makeAllreduce(in, out, count, type, op),
                reduction("allreduce", bytesOfCount(count, type, 1), type, op)));
}
void Communicator::broadcast(const void* in, void* out, size_t count, DataType type, int root) {
  runNow(traced(
      makeBroadcast(in, out, count, type, root),
      {.name = "broadcast", .bytes = bytesOfCount(count, type, 1), .type = type, .root = root}));
}
void Communicator::allgather(const void* in, void* out, size_t count, DataType type) {
  runNow(traced(makeAllgather(in, out, count, type),
                {.name = "allgather", .bytes = bytesOfCount(count, type, 1), .type = type}));
}
void Communicator::reduceScatter(const void* in, void* out, size_t count, DataType type,
                                 ReduceOp op) {
  runNow(traced(makeReduceScatter(in, out, count, type, op),
                reduction("reduce_scatter", bytesOfCount(count, type, size_), type, op)));
}
void Communicator::alltoall(const void* in, void* out, size_t count, DataType type) {
  runNow(traced(makeAlltoall(in, out, count, type),
                {.name = "alltoall", .bytes = bytesOfCount(count, type, size_), .type = type}));
}
void Communicator::send(const void* data, size_t count, DataType type, int peer, int tag) {
  runNow(traced(makeSend(data, count, type, peer, tag),
                pointToPoint("send", bytesOfCount(count, type, 1), type, peer, tag)));
}
void Communicator::recv(void* data, size_t count, DataType type, int peer, int tag) {
  runNow(traced(makeRecv(data, count, type, peer, tag),
                pointToPoint("recv", bytesOfCount(count, type, 1), type, peer, tag)));
}
void Communicator::sendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer,
                            size_t count, DataType type, int tag) {
  runNow(traced(makeSendRecv(sendData, sendPeer, recvData, recvPeer, count, type, tag),
                pointToPoint("sendrecv", bytesOfCount(count, type, 1), type, sendPeer, tag)));
}
void Communicator::barrier() {
  runNow(traced([this] { doBarrier(); }, {.name = "barrier"}));
}

Work Communicator::allreduceAsync(const void* in, void* out, size_t count, DataType type,
                                  ReduceOp op) {
  return runLater(traced(makeAllreduce(in, out, count, type, op),
                         reduction("allreduce", bytesOfCount(count, type, 1), type, op)));
}
Work Communicator::broadcastAsync(const void* in, void* out, size_t count, DataType type,
                                  int root) {
  return runLater(traced(
      makeBroadcast(in, out, count, type, root),
      {.name = "broadcast", .bytes = bytesOfCount(count, type, 1), .type = type, .root = root}));
}
Work Communicator::allgatherAsync(const void* in, void* out, size_t count, DataType type) {
  return runLater(
      traced(makeAllgather(in, out, count, type),
             {.name = "allgather", .bytes = bytesOfCount(count, type, 1), .type = type}));
}
Work Communicator::reduceScatterAsync(const void* in, void* out, size_t count, DataType type,
                                      ReduceOp op) {
  return runLater(traced(makeReduceScatter(in, out, count, type, op),
                         reduction("reduce_scatter", bytesOfCount(count, type, size_), type, op)));
}
Work Communicator::alltoallAsync(const void* in, void* out, size_t count, DataType type) {
  return runLater(
      traced(makeAlltoall(in, out, count, type),
             {.name = "alltoall", .bytes = bytesOfCount(count, type, size_), .type = type}));
}
Work Communicator::sendAsync(const void* data, size_t count, DataType type, int peer, int tag) {
  return runLater(traced(makeSend(data, count, type, peer, tag),
                         pointToPoint("send", bytesOfCount(count, type, 1), type, peer, tag)));
}
Work Communicator::recvAsync(void* data, size_t count, DataType type, int peer, int tag) {
  return runLater(traced(makeRecv(data, count, type, peer, tag),
                         pointToPoint("recv", bytesOfCount(count, type, 1), type, peer, tag)));
}
Work Communicator::sendRecvAsync(const void* sendData, int sendPeer, void* recvData, int recvPeer,
                                 size_t count, DataType type, int tag) {
  return runLater(
      traced(makeSendRecv(sendData, sendPeer, recvData, recvPeer, count, type, tag),
             pointToPoint("sendrecv", bytesOfCount(count, type, 1), type, sendPeer, tag)));
}
Work Communicator::barrierAsync() {
  return runLater(traced([this] { doBarrier(); }, {.name = "barrier"}));
}

}  // namespace distrun::comm
