#include "distrun/comm/mpi/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "distrun/comm/reduce.h"
#include "distrun/common/error.h"

namespace distrun::comm {

namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw CommunicationError(fmt::format("{} failed: {}", call, text));
}

// MPI_Init_thread on first use, MPI_Finalize at exit if distrun initialised.
class MpiRuntime {
 public:
  // The first call initialises MPI at `requested`; later ones find it so.
  static MpiRuntime& get(int requested) {
    static MpiRuntime runtime(requested);
    return runtime;
  }
  int threadLevel() const { return provided_; }

 private:
  explicit MpiRuntime(int requested) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
      MPI_Query_thread(&provided_);
      return;
    }
    check(MPI_Init_thread(nullptr, nullptr, requested, &provided_), "MPI_Init_thread");
    owned_ = true;
  }
  ~MpiRuntime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Finalize();
  }
  int provided_ = MPI_THREAD_SINGLE;
  bool owned_ = false;
};

template <DataType T, ReduceOp O>
void userReduce(void* in, void* inout, int* length, MPI_Datatype*) {
  reduceKernel(T, O)(inout, in, inout, static_cast<size_t>(*length));
}

template <DataType T>
MPI_Op makeUserOp(ReduceOp op) {
  MPI_User_function* fn = nullptr;
  switch (op) {
    case ReduceOp::kProd:
      fn = userReduce<T, ReduceOp::kProd>;
      break;
    case ReduceOp::kMin:
      fn = userReduce<T, ReduceOp::kMin>;
      break;
    case ReduceOp::kMax:
      fn = userReduce<T, ReduceOp::kMax>;
      break;
    default:
      fn = userReduce<T, ReduceOp::kSum>;
      break;
  }
  MPI_Op result;
  check(MPI_Op_create(fn, 1, &result), "MPI_Op_create");
  return result;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, bool threaded)
      : Communicator(rank, size), comm_(comm), threaded_(threaded) {
    check(MPI_Type_contiguous(2, MPI_BYTE, &twoBytes_), "MPI_Type_contiguous");
    check(MPI_Type_commit(&twoBytes_), "MPI_Type_commit");
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      halfOps_[static_cast<size_t>(op)] = makeUserOp<DataType::kFloat16>(op);
      bfloatOps_[static_cast<size_t>(op)] = makeUserOp<DataType::kBFloat16>(op);
    }
    int found = 0;
    int* upper = nullptr;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &upper, &found);
    tagUpperBound_ = found && upper ? *upper : 32767;
  }

  ~MpiCommunicator() override {
    shutdown();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (size_t i = 0; i < 4; ++i) {
      MPI_Op_free(&halfOps_[i]);
      MPI_Op_free(&bfloatOps_[i]);
    }
    MPI_Type_free(&twoBytes_);
    MPI_Comm_free(&comm_);
  }

  std::string_view backend() const override { return "mpi"; }

  // splitMpi's.
  std::unique_ptr<Communicator> split(int color) {
    MPI_Comm comm;
    check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, rank(), &comm),
          "MPI_Comm_split");
    if (comm == MPI_COMM_NULL) return nullptr;
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    return std::make_unique<MpiCommunicator>(comm, rank, size, threaded_);
  }

 protected:
  bool supportsBackgroundThread() const override { return threaded_; }

  void doAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) override {
    check(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, toInt(count), mpiType(type),
                        mpiOp(type, op), comm_),
          "MPI_Allreduce");
  }

  void doBroadcast(const void* in, void* out, size_t count, DataType type, int root) override {
    if (rank() == root && in != out) std::memcpy(out, in, count * sizeOf(type));
    check(MPI_Bcast(out, toInt(count), mpiType(type), root, comm_), "MPI_Bcast");
  }

  void doAllgather(const void* in, void* out, size_t count, DataType type) override {
    const auto* mine =
        static_cast<const char*>(out) + count * sizeOf(type) * static_cast<size_t>(rank());
    check(MPI_Allgather(in == mine ? MPI_IN_PLACE : in, toInt(count), mpiType(type), out,
                        toInt(count), mpiType(type), comm_),
          "MPI_Allgather");
  }

  void doReduceScatter(const void* in, void* out, size_t count, DataType type,
                       ReduceOp op) override {
    // MPI's in-place form leaves the result at the start of the buffer, not
    // at this rank's block: reduce into a scratch block when they overlap.
    const size_t block = count * sizeOf(type);
    const auto* mine = static_cast<const char*>(in) + block * static_cast<size_t>(rank());
    std::vector<char> scratch(out == mine ? block : 0);
    void* target = out == mine ? scratch.data() : out;
    check(MPI_Reduce_scatter_block(in, target, toInt(count), mpiType(type), mpiOp(type, op), comm_),
          "MPI_Reduce_scatter_block");
    if (target != out) std::memcpy(out, target, block);
  }

  void doAlltoall(const void* in, void* out, size_t count, DataType type) override {
    check(MPI_Alltoall(in == out ? MPI_IN_PLACE : in, toInt(count), mpiType(type), out,
                       toInt(count), mpiType(type), comm_),
          "MPI_Alltoall");
  }

  void doSend(const void* data, size_t count, DataType type, int peer, int tag) override {
    check(MPI_Send(data, toInt(count), mpiType(type), peer, mpiTag(tag), comm_), "MPI_Send");
  }

  void doRecv(void* data, size_t count, DataType type, int peer, int tag) override {
    check(MPI_Recv(data, toInt(count), mpiType(type), peer, mpiTag(tag), comm_, MPI_STATUS_IGNORE),
          "MPI_Recv");
  }

  void doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                  DataType type, int tag) override {
    check(
        MPI_Sendrecv(sendData, toInt(count), mpiType(type), sendPeer, mpiTag(tag), recvData,
                     toInt(count), mpiType(type), recvPeer, mpiTag(tag), comm_, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
  }

  void doBarrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  static int toInt(size_t count) {
    if (count > static_cast<size_t>(INT_MAX)) {
      throw UsageError(
          fmt::format("count {} exceeds MPI's limit of {} elements per call", count, INT_MAX));
    }
    return static_cast<int>(count);
  }

  int mpiTag(int tag) const {
    if (tag > tagUpperBound_) {
      throw UsageError(fmt::format("tag {} exceeds this MPI's MPI_TAG_UB {}", tag, tagUpperBound_));
    }
    return tag;
  }

  MPI_Datatype mpiType(DataType type) const {
    switch (type) {
      case DataType::kFloat32:
        return MPI_FLOAT;
      case DataType::kFloat64:
        return MPI_DOUBLE;
      case DataType::kInt32:
        return MPI_INT32_T;
      case DataType::kInt64:
        return MPI_INT64_T;
      case DataType::kFloat16:
      case DataType::kBFloat16:
        return twoBytes_;
    }
    return MPI_DATATYPE_NULL;
  }

  MPI_Op mpiOp(DataType type, ReduceOp op) const {
    if (type == DataType::kFloat16) return halfOps_[static_cast<size_t>(op)];
    if (type == DataType::kBFloat16) return bfloatOps_[static_cast<size_t>(op)];
    switch (op) {
      case ReduceOp::kProd:
        return MPI_PROD;
      case ReduceOp::kMin:
        return MPI_MIN;
      case ReduceOp::kMax:
        return MPI_MAX;
      default:
        return MPI_SUM;
    }
  }

  MPI_Comm comm_;
  bool threaded_;
  int tagUpperBound_ = 32767;
  MPI_Datatype twoBytes_ = MPI_DATATYPE_NULL;
  MPI_Op halfOps_[4] = {};
  MPI_Op bfloatOps_[4] = {};
};

}  // namespace

std::unique_ptr<Communicator> splitMpi(Communicator& world, int color) {
  auto* mpi = dynamic_cast<MpiCommunicator*>(&world);
  if (!mpi) {
    throw UsageError(fmt::format("splitMpi: the communicator is {}, not mpi", world.backend()));
  }
  return mpi->split(color);
}

std::unique_ptr<Communicator> connectMpi(MpiThreads threads) {
  const MpiRuntime& runtime =
      MpiRuntime::get(threads == MpiThreads::kSingle     ? MPI_THREAD_SINGLE
                      : threads == MpiThreads::kFunneled ? MPI_THREAD_FUNNELED
                                                         : MPI_THREAD_SERIALIZED);
  MPI_Comm comm;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return std::make_unique<MpiCommunicator>(comm, rank, size,
                                           runtime.threadLevel() >= MPI_THREAD_SERIALIZED);
}

}  // namespace distrun::comm
