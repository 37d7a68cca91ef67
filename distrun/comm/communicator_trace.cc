// The communicator's part of the trace (docs/observability.md): a span per
// operation, and the clock offset to rank 0.
#include <limits>

#include "distrun/comm/communicator.h"
#include "distrun/trace/trace.h"

namespace distrun::comm {

namespace {

// The ping-pong's messages, clear of user tags in practice (0 <= tag < 2^31;
// it runs when the communicator is made, before any user operation).
constexpr int kClockTag = 0x7fffff00;

}  // namespace

Communicator::TracedCall Communicator::reduction(const char* name, size_t bytes, DataType type,
                                                 ReduceOp op) {
  return {.name = name, .bytes = bytes, .type = type, .op = nameOf(op).data()};
}

Communicator::TracedCall Communicator::pointToPoint(const char* name, size_t bytes, DataType type,
                                                    int peer, int tag) {
  return {
      .name = name, .bytes = bytes, .type = type, .peer = peer, .tag = tag, .collective = false};
}

// The span's arguments are read when the operation runs: DDP's note (a
// bucket) at the call, the algorithm once the backend has chosen it.
Communicator::Task Communicator::traced(Task task, TracedCall call) {
  const int64_t seq = call.collective ? nextSeq_++ : -1;
  if (!task || !trace::enabled()) return task;
  trace::Args args;
  args.add("comm", number_);
  if (seq >= 0) args.add("seq", seq);
  args.add("bytes", call.bytes);
  if (call.name != std::string_view("barrier")) args.add("type", nameOf(call.type));
  if (call.op != nullptr) args.add("op", call.op);
  if (call.root >= 0) args.add("root", call.root);
  if (call.peer >= 0) args.add("peer", call.peer).add("tag", call.tag);
  if (const trace::Args* note = trace::CollectiveNote::current()) args.merge(*note);
  return [this, task = std::move(task), name = call.name, args = std::move(args)] {
    algorithm_ = nullptr;
    trace::Span span(name, "comm", trace::Thread::kComm);
    task();
    span.args(args).arg("algorithm", algorithm_ != nullptr ? algorithm_ : backend());
  };
}

// Rank r sends its time t0; rank 0 answers with t1 (received) and t2
// (answered); r reads t3 on arrival. offset = ((t1 - t0) + (t2 - t3)) / 2,
// round trip = (t3 - t0) - (t2 - t1): NTP's estimate, best when the trip
// is shortest (the first one includes waiting for rank 0's turn).
Communicator::ClockOffset Communicator::clockOffsetToRankZero(int rounds) {
  ClockOffset best;
  if (size_ == 1) return best;
  best.rttUs = std::numeric_limits<double>::infinity();
  runNow([&] {
    double times[2] = {0, 0};
    for (int r = 1; r < size_ && rank_ == 0; ++r) {
      for (int i = 0; i < rounds; ++i) {
        doRecv(times, 1, DataType::kFloat64, r, kClockTag);
        times[0] = trace::now();
        times[1] = trace::now();
        doSend(times, 2, DataType::kFloat64, r, kClockTag);
      }
    }
    for (int i = 0; i < rounds && rank_ != 0; ++i) {
      const double t0 = trace::now();
      doSend(&t0, 1, DataType::kFloat64, 0, kClockTag);
      doRecv(times, 2, DataType::kFloat64, 0, kClockTag);
      const double t3 = trace::now();
      const double rtt = (t3 - t0) - (times[1] - times[0]);
      if (rtt < best.rttUs) best = {((times[0] - t0) + (times[1] - t3)) / 2, rtt};
    }
  });
  if (rank_ == 0) best = {};
  return best;
}

}  // namespace distrun::comm
