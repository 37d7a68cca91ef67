// NcclCommunicator's own logic without a GPU: an NCCL whose calls are
// recorded and answer as a test says (a lost peer, a refused pointer, an
// init that never ends), over the host-memory runtime. What NCCL is asked,
// and that every failure is the named error after ncclCommAbort.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "distrun/comm/gpu/testing/host_memory_runtime.h"
#include "distrun/comm/nccl/nccl_communicator.h"
#include "distrun/common/error.h"

namespace distrun::comm::nccl {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What the recorded NCCL answers, and what it was asked.
struct Script {
  ncclResult_t initStarts = ncclSuccess;    // ncclCommInitRankConfig's result
  bool initEnds = true;                     // else init stays ncclInProgress
  ncclResult_t enqueue = ncclSuccess;       // what a collective returns
  ncclResult_t afterEnqueue = ncclSuccess;  // ncclCommGetAsyncError once one ran
  std::string lastError;
  bool enqueued = false;
  int aborts = 0;
  int destroys = 0;
  std::vector<std::string> calls;
};
Script script;
char commHandle;
ncclComm_t fakeComm() { return reinterpret_cast<ncclComm_t>(&commHandle); }

ncclResult_t initRank(ncclComm_t* comm, int, ncclUniqueId, int, ncclConfig_t* config) {
  script.calls.push_back(fmt::format("init blocking={}", config->blocking));
  *comm = fakeComm();
  return script.initStarts;
}
ncclResult_t asyncError(ncclComm_t, ncclResult_t* state) {
  *state = script.enqueued ? script.afterEnqueue : script.initEnds ? ncclSuccess : ncclInProgress;
  return ncclSuccess;
}
ncclResult_t abortComm(ncclComm_t) {
  ++script.aborts;
  return ncclSuccess;
}
ncclResult_t finalize(ncclComm_t) { return ncclSuccess; }
ncclResult_t destroyComm(ncclComm_t) {
  ++script.destroys;
  return ncclSuccess;
}
const char* errorString(ncclResult_t) { return "(NCCL's words)"; }
const char* lastError(ncclComm_t) { return script.lastError.c_str(); }
ncclResult_t enqueued(std::string call) {
  script.calls.push_back(std::move(call));
  script.enqueued = true;
  return script.enqueue;
}
ncclResult_t allReduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                       ncclComm_t, cudaStream_t) {
  return enqueued(fmt::format("allreduce {} type={} op={}{}", count, static_cast<int>(type),
                              static_cast<int>(op), in == out ? " in place" : ""));
}
ncclResult_t send(const void*, size_t count, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
  return enqueued(fmt::format("send {} to {}", count, peer));
}
ncclResult_t recv(void*, size_t count, ncclDataType_t, int peer, ncclComm_t, cudaStream_t) {
  return enqueued(fmt::format("recv {} from {}", count, peer));
}
ncclResult_t groupStart() { return enqueued("group start"); }
ncclResult_t groupEnd() { return enqueued("group end"); }

NcclLibrary recordedNccl() {
  NcclLibrary n;
  n.library = "recorded";
  n.version = 22809;
  n.commInitRankConfig = initRank;
  n.commFinalize = finalize;
  n.commDestroy = destroyComm;
  n.commAbort = abortComm;
  n.commGetAsyncError = asyncError;
  n.getErrorString = errorString;
  n.getLastError = lastError;
  n.allReduce = allReduce;
  n.send = send;
  n.recv = recv;
  n.groupStart = groupStart;
  n.groupEnd = groupEnd;
  return n;
}

class NcclFailureTest : public ::testing::Test {
 protected:
  void SetUp() override { script = Script{}; }
  std::unique_ptr<NcclCommunicator> make(const gpu::GpuRuntime& gpu) {
    return std::make_unique<NcclCommunicator>(0, 2, ncclUniqueId{}, NcclOptions{0, 200ms}, nccl_,
                                              gpu);
  }
  std::unique_ptr<NcclCommunicator> make() { return make(gpu::testing::hostMemoryRuntime()); }
  NcclLibrary nccl_ = recordedNccl();
};

TEST_F(NcclFailureTest, AHealthyCommunicatorAsksNcclForWhatItWasAsked) {
  {
    std::unique_ptr<NcclCommunicator> comm = make();
    float data[4] = {};
    comm->allreduce(data, data, 4, DataType::kFloat32, ReduceOp::kAvg);
    float blocks[2] = {};
    comm->alltoall(blocks, blocks, 1, DataType::kFloat32);
    comm->barrier();
  }
  EXPECT_THAT(script.calls,
              ElementsAre("init blocking=0", "allreduce 4 type=7 op=4 in place", "group start",
                          "send 1 to 0", "recv 1 from 0", "send 1 to 1", "recv 1 from 1",
                          "group end", "allreduce 1 type=2 op=0 in place"));
  EXPECT_EQ(script.aborts, 0);
  EXPECT_EQ(script.destroys, 1);
}

TEST_F(NcclFailureTest, AnInitThatNeverEndsTimesOutAndIsAborted) {
  script.initEnds = false;
  try {
    make();
    ADD_FAILURE() << "no TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_EQ(std::string(e.what()),
              "nccl init (rank 0 of 2, cuda:0): not done after 0.2 s (a peer stopped, left or "
              "never came); the communicator was aborted");
  }
  EXPECT_EQ(script.aborts, 1);
  EXPECT_EQ(script.destroys, 0);
}

TEST_F(NcclFailureTest, TwoRanksOnOneGpuAtInitSayWhatToDo) {
  script.initStarts = ncclInvalidUsage;
  script.lastError = "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000";
  try {
    make();
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nccl init (rank 0 of 2, cuda:0): ncclInvalidUsage: (NCCL's "
                                    "words) (Duplicate GPU detected"));
    EXPECT_THAT(e.what(), HasSubstr("share one through the gloo backend"));
  }
  EXPECT_EQ(script.aborts, 1);
}

TEST_F(NcclFailureTest, ALostPeerIsCommunicationErrorAfterAbortAndStaysSo) {
  std::unique_ptr<NcclCommunicator> comm = make();
  script.afterEnqueue = ncclRemoteError;
  script.lastError = "remote process exited or there was a network error";
  float data[4] = {};
  std::string first;
  try {
    comm->allreduce(data, data, 4, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "no CommunicationError";
  } catch (const CommunicationError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kPeerLost);
    first = e.what();
  }
  EXPECT_EQ(first,
            "nccl allreduce (rank 0 of 2, cuda:0): ncclRemoteError: (NCCL's words) (remote process "
            "exited or there was a network error); the communicator was aborted");
  EXPECT_EQ(script.aborts, 1);
  try {
    comm->barrier();
    ADD_FAILURE() << "the broken communicator ran a barrier";
  } catch (const CommunicationError& e) {
    EXPECT_EQ(std::string(e.what()), first);
  }
  comm.reset();
  EXPECT_EQ(script.destroys, 0);  // aborted, not finalized
}

TEST_F(NcclFailureTest, AHostPointerIsAUsageErrorAndNothingIsAborted) {
  std::unique_ptr<NcclCommunicator> comm = make();
  script.enqueue = ncclInvalidArgument;
  float data[4] = {};
  try {
    comm->allreduce(data, data, 4, DataType::kFloat32, ReduceOp::kSum);
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("buffers must be device memory of this GPU"));
  }
  EXPECT_EQ(script.aborts, 0);
}

cudaError_t neverDone(cudaEvent_t) { return cudaErrorNotReady; }

TEST_F(NcclFailureTest, AnOperationThatNeverEndsTimesOutAndIsAborted) {
  gpu::GpuRuntime stuck = gpu::testing::hostMemoryRuntime();
  stuck.eventQuery = neverDone;
  std::unique_ptr<NcclCommunicator> comm = make(stuck);
  float data[4] = {};
  Work work = comm->allreduceAsync(data, data, 4, DataType::kFloat32, ReduceOp::kSum);
  try {
    work.wait();
    ADD_FAILURE() << "no TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nccl allreduce (rank 0 of 2, cuda:0): not done after 0.2 s"));
  }
  EXPECT_EQ(script.aborts, 1);
}

}  // namespace
}  // namespace distrun::comm::nccl
