#include "distrun/launch/failure_cause.h"

#include <csignal>

#include <gtest/gtest.h>

namespace distrun::launch {
namespace {

WorkerFailure failure(int code, int signal, std::vector<std::string> tail) {
  WorkerFailure f;
  f.rank = 1;
  f.exitCode = code;
  f.signal = signal;
  f.stderrTail = std::move(tail);
  return f;
}

TEST(FailureCauseTest, DistrunsPeerLostAndRendezvousCodesAreEchoes) {
  EXPECT_TRUE(isEcho(failure(69, 0, {})));
  EXPECT_TRUE(isEcho(failure(76, 0, {})));
}

TEST(FailureCauseTest, OwnErrorsAreCauses) {
  EXPECT_FALSE(isEcho(failure(74, 0,
                              {"distrun: error: snapshot x.snap: cannot create "
                               "x.snap.tmp.4711: No space left on device"})));
  EXPECT_FALSE(
      isEcho(failure(1, 0, {"Traceback (most recent call last):", "ValueError: bad batch"})));
  EXPECT_FALSE(isEcho(failure(0, SIGSEGV, {})));
  EXPECT_FALSE(isEcho(failure(0, SIGKILL, {})));
  EXPECT_FALSE(isEcho(failure(7, 0, {})));
}

// A failure while a rank of its node that had raised still ran (its
// @record error file written): an echo whatever its code, and it says so in
// the record peers read.
TEST(FailureCauseTest, AFailureAfterAnotherRankRaisedIsAnEcho) {
  WorkerFailure f = failure(2, 0, {"all_reduce failed: giving up"});
  EXPECT_FALSE(isEcho(f));
  f.afterRaiseOf = 0;
  EXPECT_TRUE(isEcho(f));
  EXPECT_TRUE(isEcho(WorkerFailure::fromJson(f.toJson())));
  EXPECT_EQ(WorkerFailure::fromJson(failure(2, 0, {}).toJson()).afterRaiseOf, -1);
}

// The messages as Gloo, PyTorch, NCCL and distrun print them.
TEST(FailureCauseTest, ALostPeerInTheStderrTailIsAnEcho) {
  for (const char* line : {
           "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection "
           "closed by peer [127.0.0.1]:28048",
           "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error "
           "[10.0.0.7]:41012: Connection reset by peer",
           "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1347, remote "
           "process exited or there was a network error, NCCL version 2.18.5",
           "[W TCPStore.cpp:138] [c10d] recvValueWithTimeout failed on SocketImpl(fd=3): Failed "
           "to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown "
           "or crash?",
           "distrun: error: allreduce: lost rank 0 (host node1, pid 4711): it exited or closed "
           "its communicator during a shared-memory allreduce",
       }) {
    EXPECT_TRUE(isEcho(failure(1, 0, {"Traceback (most recent call last):", line}))) << line;
    EXPECT_EQ(echoLine({"before", line, "after"}), line);
  }
}

TEST(FailureCauseTest, ALostPeerCountsHoweverTheWorkerEnded) {
  // PyTorch's NCCL watchdog aborts the process on a remote error.
  EXPECT_TRUE(isEcho(failure(0, SIGABRT,
                             {"terminate called after throwing an instance of "
                              "'std::runtime_error'",
                              "  what():  NCCL error: remote process exited or there was a "
                              "network error, NCCL version 2.14.3"})));
}

// distrun-train: rank 0 refused its --snapshot, every other rank stops
// with its error, the same exit code.
TEST(FailureCauseTest, AnotherRanksErrorRelayedIsAnEcho) {
  const std::string relayed =
      "distrun: error: rank 0: --snapshot /sys/s.snap: cannot create a file in /sys: "
      "Permission denied: choose a folder you can write to";
  EXPECT_TRUE(isEcho(failure(74, 0, {relayed})));
  EXPECT_EQ(echoLine({"loss 0.3", relayed}), relayed);
  EXPECT_FALSE(isEcho(failure(
      78, 0, {"distrun: error: DistributedDataParallel: rank 2's model differs from rank 0's"})));
  EXPECT_FALSE(isEcho(failure(1, 0, {"distrun: error: rank : x", "distrun: error: rank 0 x"})));
}

TEST(FailureCauseTest, NoEchoLineIsEmpty) {
  EXPECT_EQ(echoLine({"loss 0.3", "ValueError: bad batch"}), "");
  EXPECT_EQ(echoLine({}), "");
}

// torchrun's order: the first exception raised, by its error file's write
// time, against another's write time or, without one, its reap time.
TEST(FailureCauseTest, AnExceptionRanksByWhenItsErrorFileWasWritten) {
  WorkerFailure reaped = failure(2, 0, {"rank 0: the all_reduce failed"});
  reaped.exitedMs = 1000500;
  WorkerFailure before = failure(0, SIGTERM, {});
  before.errorMessage = "ValueError: bad batch";
  before.errorTimestamp = 1000;
  before.errorWrittenMs = 1000460;
  EXPECT_TRUE(raised(before));
  EXPECT_FALSE(raised(reaped));
  EXPECT_TRUE(raisedBefore(before, reaped));
  EXPECT_FALSE(raisedBefore(reaped, before)) << "no exception of its own";
  WorkerFailure after = before;
  after.errorWrittenMs = 1000540;
  EXPECT_FALSE(raisedBefore(after, reaped));
  EXPECT_TRUE(raisedBefore(before, after)) << "both raised: the earlier write";
  WorkerFailure old = before;  // a record without write times: by the second
  old.errorWrittenMs = 0;
  after.errorTimestamp = 1001;
  EXPECT_TRUE(raisedBefore(old, after));
  EXPECT_FALSE(raisedBefore(old, reaped)) << "a reap time compares with a write time only";
}

TEST(FailureCauseTest, TheTimesThatOrderFailuresCrossNodes) {
  WorkerFailure f = failure(1, 0, {});
  f.exitedMs = 1764640000500;
  f.errorMessage = "ValueError: bad batch";
  f.errorWrittenMs = 1764640000460;
  WorkerFailure crossed = WorkerFailure::fromJson(f.toJson());
  EXPECT_EQ(crossed.exitedMs, f.exitedMs);
  EXPECT_EQ(crossed.errorWrittenMs, f.errorWrittenMs);
}

}  // namespace
}  // namespace distrun::launch
