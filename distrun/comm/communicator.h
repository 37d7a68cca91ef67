#pragma once

// The communication layer: one interface over existing engines (Gloo, MPI).
// Create one with connect() (connect.h), from the environment a launcher
// sets; see docs/comm.md.
//
// Contracts, for every backend:
//  - Collective matching. Every rank calls the same collectives in the same
//    order with the same count, type, op and root; a mismatch is undefined
//    (usually an error or a timeout, never silently wrong data by design).
//  - Ordering. Operations run in the order they are issued, blocking and
//    asynchronous ones alike: a blocking call first waits for every pending
//    asynchronous operation, then runs on the calling thread.
//  - Thread-safety. Issue operations from one thread at a time; a Work may be
//    waited on from any thread. Separate communicators are independent.
//  - Buffers. The caller owns them. For an asynchronous operation they must
//    stay alive and untouched until its Work has completed. Out-of-place:
//    input and output do not overlap. In-place: pass the same pointer (the
//    positions for allgather and reduce_scatter are given per method).
//  - Counts. A count of 0 is a no-op that communicates nothing.
//  - Failure. A lost peer throws CommunicationError naming the peer's rank,
//    host and pid; a peer that stops answering throws TimeoutError after
//    the communicator's timeout. Bad arguments throw UsageError before
//    anything is sent. After a communication failure the communicator is
//    broken: every later call throws the first error again.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "distrun/comm/dtype.h"
#include "distrun/comm/work.h"

namespace distrun::comm {

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "gloo" or "mpi".
  virtual std::string_view backend() const = 0;
  // How the ranks reach each other, in a user's words ("tcp", "shared
  // memory", "shared memory within each of 2 nodes, tcp between them");
  // empty where the backend does not say (MPI chooses for itself).
  virtual std::string transport() const { return {}; }

  // out[i] = OP over ranks of in[i], on every rank. In-place: in == out.
  void allreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // out = root's `in` on every rank (`in` is read on the root only; the
  // root may pass in == out).
  void broadcast(const void* in, void* out, size_t count, DataType type, int root);
  // out holds size() blocks of `count`: block r is rank r's `in`.
  // In-place: in == out + rank() * count.
  void allgather(const void* in, void* out, size_t count, DataType type);
  // `in` holds size() blocks of `count`; out = OP over ranks of block
  // rank(). In-place: out == in + rank() * count.
  void reduceScatter(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  // `in` and `out` hold size() blocks of `count`: block j of `in` goes to
  // rank j, block r of `out` comes from rank r. In-place: in == out.
  void alltoall(const void* in, void* out, size_t count, DataType type);
  // Point to point. A send matches the recv on `peer` with the same tag
  // (0 <= tag < 2^31); messages with one tag between two ranks arrive in
  // order. A send may complete only once the peer has posted the matching
  // recv, and operations run one at a time: two ranks that both send first
  // wait for each other. Exchange with sendRecv, or order by rank parity.
  void send(const void* data, size_t count, DataType type, int peer, int tag);
  void recv(void* data, size_t count, DataType type, int peer, int tag);
  // Sends `sendData` to `sendPeer` and receives `recvData` from `recvPeer`
  // at the same time (a ring shift: sendPeer = rank+1, recvPeer = rank-1).
  void sendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                DataType type, int tag);
  // Returns once every rank has entered the barrier.
  void barrier();

  // Asynchronous forms: same arguments, run in issue order on a background
  // thread; the Work completes when the operation does.
  Work allreduceAsync(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  Work broadcastAsync(const void* in, void* out, size_t count, DataType type, int root);
  Work allgatherAsync(const void* in, void* out, size_t count, DataType type);
  Work reduceScatterAsync(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  Work alltoallAsync(const void* in, void* out, size_t count, DataType type);
  Work sendAsync(const void* data, size_t count, DataType type, int peer, int tag);
  Work recvAsync(void* data, size_t count, DataType type, int peer, int tag);
  Work sendRecvAsync(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                     DataType type, int tag);
  Work barrierAsync();

  // Memory for in-place allreduces, `bytes` long, 64-byte aligned.
  // Collective: every rank calls it, in the same order, with the same
  // `bytes`. Where the backend shares memory among the ranks (Gloo with
  // every rank on one host), it is this rank's region of a segment every
  // rank maps, and an in-place allreduce of data inside it, at the same
  // offset on every rank, sums the ranks' data where it lies: each rank
  // reduces a share and writes it into every rank's region, with no copy
  // in or out (DDP keeps its gradient buckets here). Elsewhere it is
  // ordinary memory. It stays valid while the pointer (or a copy) lives,
  // after the communicator too.
  std::shared_ptr<void> allocateReducible(size_t bytes);

  // Collective, for the trace (docs/observability.md): the offset of this
  // rank's trace clock to rank 0's (rank 0's = this one's + offsetUs) by
  // NTP-style ping-pong with rank 0, one rank after another, the exchange
  // with the shortest round trip of `rounds` kept. Rank 0 gets {0, 0}.
  // Not traced itself and not counted in the collectives' sequence.
  struct ClockOffset {
    double offsetUs = 0;
    double rttUs = 0;
  };
  ClockOffset clockOffsetToRankZero(int rounds);

  // Typed helpers for the common in-place reduction.
  template <class T>
  void allreduce(T* data, size_t count, ReduceOp op) {
    allreduce(data, data, count, dataTypeOf<T>(), op);
  }

  template <class T>
  static constexpr DataType dataTypeOf();

 protected:
  Communicator(int rank, int size);

  // Backends implement these; they run on one thread at a time, after the
  // arguments were checked. kAvg reaches them only where averagesNatively()
  // (else it arrives as kSum and the base divides). Counts are > 0.
  // Failures throw.
  virtual void doAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) = 0;
  virtual void doBroadcast(const void* in, void* out, size_t count, DataType type, int root) = 0;
  virtual void doAllgather(const void* in, void* out, size_t count, DataType type) = 0;
  virtual void doReduceScatter(const void* in, void* out, size_t count, DataType type,
                               ReduceOp op) = 0;
  virtual void doAlltoall(const void* in, void* out, size_t count, DataType type) = 0;
  virtual void doSend(const void* data, size_t count, DataType type, int peer, int tag) = 0;
  virtual void doRecv(void* data, size_t count, DataType type, int peer, int tag) = 0;
  virtual void doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer,
                          size_t count, DataType type, int tag) = 0;
  virtual void doBarrier() = 0;

  // Whether kAvg reaches doAllreduce and doReduceScatter as it is (NCCL's
  // ncclAvg, on device memory the base cannot divide); false: it arrives as
  // kSum and the base divides.
  virtual bool averagesNatively() const { return false; }

  // An in-place allreduce the backend can run where `data` lies (kAvg
  // included, divided by the backend); false: the base runs doAllreduce.
  virtual bool doAllreduceInPlace(void* data, size_t count, DataType type, ReduceOp op);
  // allocateReducible's memory; by default the heap's.
  virtual std::shared_ptr<void> doAllocateReducible(size_t bytes);

  // Whether operations may run on the background thread. The MPI backend
  // says no when the library lacks MPI_THREAD_SERIALIZED; async operations
  // then complete before they return.
  virtual bool supportsBackgroundThread() const { return true; }

  // Stops the background thread; a backend's destructor must call it
  // before its own members go.
  void shutdown();

  // Names the algorithm of the operation running now in its trace span
  // ("shm", "ring", ...); call from the do* methods. Otherwise the span
  // says backend().
  void noteAlgorithm(const char* name) { algorithm_ = name; }

 private:
  using Task = std::function<void()>;
  Task makeAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  Task makeBroadcast(const void* in, void* out, size_t count, DataType type, int root);
  Task makeAllgather(const void* in, void* out, size_t count, DataType type);
  Task makeReduceScatter(const void* in, void* out, size_t count, DataType type, ReduceOp op);
  Task makeAlltoall(const void* in, void* out, size_t count, DataType type);
  Task makeSend(const void* data, size_t count, DataType type, int peer, int tag);
  Task makeRecv(void* data, size_t count, DataType type, int peer, int tag);
  Task makeSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                    DataType type, int tag);

  // What an operation's trace span says (communicator_trace.cc).
  struct TracedCall {
    const char* name;
    size_t bytes = 0;
    DataType type = DataType::kFloat32;
    const char* op = nullptr;  // a reduction's
    int root = -1;             // broadcast
    int peer = -1;             // point to point
    int tag = -1;
    bool collective = true;  // counted in the sequence the ranks share
  };
  // `task` wrapped to record its span when tracing is on (else as it is);
  // a collective takes the next sequence number either way.
  Task traced(Task task, TracedCall call);
  // count * sizeOf(type) * blocks (the bytes a span reports; the
  // operation itself refuses sizes that overflow).
  static size_t bytesOfCount(size_t count, DataType type, int blocks);
  static TracedCall reduction(const char* name, size_t bytes, DataType type, ReduceOp op);
  static TracedCall pointToPoint(const char* name, size_t bytes, DataType type, int peer, int tag);

  void runNow(const Task& task);
  Work runLater(Task task);
  // Runs `task`; the first error is remembered and rethrown by every later
  // operation.
  void runGuarded(const Task& task);

  int rank_;
  int size_;
  std::mutex errorMutex_;
  std::exception_ptr firstError_;
  std::unique_ptr<WorkQueue> queue_;
  int number_;           // in this process, from 0 in creation order (the trace's "comm")
  int64_t nextSeq_ = 0;  // the next collective's number (the trace's "seq")
  const char* algorithm_ = nullptr;  // noted by the operation running now
};

template <class T>
constexpr DataType Communicator::dataTypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::kFloat64;
  else if constexpr (std::is_same_v<T, Half>)
    return DataType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DataType::kBFloat16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::kInt32;
  else {
    static_assert(std::is_same_v<T, int64_t>, "unsupported element type");
    return DataType::kInt64;
  }
}

}  // namespace distrun::comm
