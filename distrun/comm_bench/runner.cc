#include "distrun/comm_bench/runner.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/comm/reduce.h"
#include "distrun/comm_bench/collectives.h"
#include "distrun/common/system.h"
#include "distrun/config.h"

namespace distrun::comm_bench {

using comm::DataType;
using comm::ReduceOp;
using Clock = std::chrono::steady_clock;

namespace {

// The mean time per operation on this rank, reduced across ranks per -a.
double reducedTime(comm::Communicator& comm, double us, int average) {
  double value = average == 0 && comm.rank() != 0 ? 0 : us;
  ReduceOp op = average == 2 ? ReduceOp::kMin : average == 3 ? ReduceOp::kMax : ReduceOp::kSum;
  comm.allreduce(&value, 1, op);
  return average == 1 ? value / comm.size() : value;
}

Measurement measure(const BenchTarget& target, CollectiveRun& run, bool inPlace,
                    const BenchOptions& o, double factor) {
  comm::Communicator& comm = target.control;
  for (int i = 0; i < o.warmupIters; ++i) run.run(inPlace);
  target.measured.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < o.iters; ++i) run.run(inPlace);
  const double us =
      std::chrono::duration<double, std::micro>(Clock::now() - start).count() / o.iters;
  Measurement m;
  m.timeUs = reducedTime(comm, us, o.average);
  m.algBw = m.timeUs > 0 ? static_cast<double>(run.bytes()) / m.timeUs / 1e3 : 0;
  m.busBw = m.algBw * factor;
  if (o.checkIters > 0) {
    long long wrong = 0;
    for (int i = 0; i < o.checkIters; ++i) wrong += run.check(inPlace);
    int64_t total = wrong;
    comm.allreduce(&total, 1, ReduceOp::kSum);
    m.wrong = total;
  }
  return m;
}

}  // namespace

std::vector<RankInfo> gatherRankInfo(comm::Communicator& comm, const std::string& device) {
  struct Entry {
    int64_t pid;
    char host[64];
    char device[32];
  };
  Entry mine{static_cast<int64_t>(::getpid()), {}, {}};
  const std::string host = readHostFacts().hostname;
  host.copy(mine.host, sizeof(mine.host) - 1);
  device.copy(mine.device, sizeof(mine.device) - 1);
  std::vector<Entry> all(static_cast<size_t>(comm.size()));
  static_assert(sizeof(Entry) % sizeof(int64_t) == 0);
  constexpr size_t kWords = sizeof(Entry) / sizeof(int64_t);
  comm.allgather(&mine, all.data(), kWords, DataType::kInt64);
  std::vector<RankInfo> info;
  for (int r = 0; r < comm.size(); ++r) {
    const Entry& e = all[static_cast<size_t>(r)];
    info.push_back({r, static_cast<long>(e.pid),
                    std::string(e.host, strnlen(e.host, sizeof(e.host))),
                    std::string(e.device, strnlen(e.device, sizeof(e.device)))});
  }
  return info;
}

BenchReport runCollectiveBench(comm::Communicator& comm, const BenchOptions& o) {
  return runCollectiveBench(BenchTarget{comm, comm, nullptr}, o);
}

BenchReport runCollectiveBench(const BenchTarget& target, const BenchOptions& o) {
  comm::Communicator& comm = target.measured;
  const Collective collective = parseCollective(o.collective);
  BenchReport report;
  report.collective = std::string(nameOf(collective));
  report.backend = std::string(comm.backend());
  report.transport = comm.transport();
  report.reductions = comm::reductionInstructions();
  report.version = DISTRUN_VERSION;
  report.ranks = comm.size();
  report.minBytes = o.minBytes;
  report.maxBytes = o.maxBytes;
  report.stepFactor = o.stepFactor;
  report.stepBytes = o.stepBytes;
  report.warmupIters = o.warmupIters;
  report.iters = o.iters;
  report.checkIters = o.checkIters;
  report.average = o.average;
  report.rankInfo =
      gatherRankInfo(target.control, target.memory != nullptr ? target.memory->describe() : "cpu");
  const double factor = busBandwidthFactor(collective, comm.size());
  const std::vector<ReduceOp> noOp = {ReduceOp::kSum};
  for (DataType type : o.types) {
    for (ReduceOp op : takesReduceOp(collective) ? o.ops : noOp) {
      for (size_t bytes : sweepSizes(o)) {
        CollectiveRun run(comm, collective, bytes, type, op, o.root, target.memory);
        ResultRow row;
        row.bytes = run.bytes();
        row.count = run.count();
        row.type = std::string(comm::nameOf(type));
        row.redop = takesReduceOp(collective) ? std::string(comm::nameOf(op)) : "none";
        row.root = takesRoot(collective) ? o.root : -1;
        row.outOfPlace = measure(target, run, false, o, factor);
        row.inPlace = measure(target, run, true, o, factor);
        report.rows.push_back(std::move(row));
      }
    }
  }
  target.control.barrier();
  return report;
}

PiResult computePi(comm::Communicator& comm, long long intervals) {
  comm.barrier();
  const auto start = Clock::now();
  // Points 0..N; this rank sums [first, last) with the trapezoid weights.
  const long long points = intervals + 1;
  const long long first = points * comm.rank() / comm.size();
  const long long last = points * (comm.rank() + 1) / comm.size();
  const double h = 1.0 / static_cast<double>(intervals);
  // Compensated (Kahan) summation: 10^8 plain additions would lose ~1e-13.
  double sum = 0;
  double carry = 0;
  for (long long i = first; i < last; ++i) {
    const double x = static_cast<double>(i) * h;
    const double weight = i == 0 || i == intervals ? 0.5 : 1.0;
    const double term = weight * 4.0 / (1.0 + x * x) - carry;
    const double next = sum + term;
    carry = (next - sum) - term;
    sum = next;
  }
  double total = sum * h;
  comm.allreduce(&total, 1, ReduceOp::kSum);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  comm.allreduce(&seconds, 1, ReduceOp::kMax);
  return {total, std::fabs(total - std::numbers::pi), seconds, intervals, comm.size()};
}

void writePi(std::ostream& out, const PiResult& pi, const std::string& format,
             const std::string& backend) {
  if (format == "json") {
    nlohmann::ordered_json j = {
        {"pi", pi.value},    {"error", pi.error},  {"intervals", pi.intervals},
        {"ranks", pi.ranks}, {"backend", backend}, {"seconds", pi.seconds}};
    out << j.dump(2) << "\n";
  } else if (format == "csv") {
    out << "pi,error,intervals,ranks,backend,seconds\n"
        << fmt::format("{:.15f},{:.3e},{},{},{},{:.6f}\n", pi.value, pi.error, pi.intervals,
                       pi.ranks, backend, pi.seconds);
  } else {
    out << fmt::format("pi = {:.15f}  error = {:.3e}  ({} intervals on {} ranks, {}, {:.3f} s)\n",
                       pi.value, pi.error, pi.intervals, pi.ranks, backend, pi.seconds);
  }
}

}  // namespace distrun::comm_bench
