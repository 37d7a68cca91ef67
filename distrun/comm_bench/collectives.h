#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "distrun/comm/communicator.h"
#include "distrun/comm_bench/device_memory.h"

namespace distrun::comm_bench {

enum class Collective { kAllreduce, kBroadcast, kAllgather, kReduceScatter, kAlltoall, kSendRecv };

// nccl-tests' names without "_perf": all_reduce, broadcast, all_gather,
// reduce_scatter, alltoall, sendrecv.
std::string_view nameOf(Collective c);
// Accepts those names and the spellings without underscores (allreduce,
// allgather, reducescatter). Throws UsageError naming COLLECTIVE.
Collective parseCollective(std::string_view text);
std::vector<std::string> collectiveNames();

bool takesReduceOp(Collective c);
bool takesRoot(Collective c);

// The bus-bandwidth factor of nccl-tests (docs/benchmark_metrics.md):
// busbw = algbw * factor.
double busBandwidthFactor(Collective c, int ranks);

// One size of one collective: the element counts and the buffers of this
// rank, laid out as nccl-tests does (size = the whole array for allgather,
// reduce_scatter and alltoall, whose per-rank block is size / ranks).
//
// With `device` (--device cuda) the collective runs on device copies of the
// two arrays (the same offsets, so in-place stays in place); check() fills
// the host arrays, uploads them, runs, and downloads them to count.
class CollectiveRun {
 public:
  CollectiveRun(comm::Communicator& comm, Collective c, size_t bytes, comm::DataType type,
                comm::ReduceOp op, int root, DeviceMemory* device = nullptr);
  ~CollectiveRun();
  CollectiveRun(const CollectiveRun&) = delete;
  CollectiveRun& operator=(const CollectiveRun&) = delete;

  size_t bytes() const { return count_ * comm::sizeOf(type_); }  // as reported
  size_t count() const { return count_; }                        // elements, as reported

  // One operation, out-of-place or in-place.
  void run(bool inPlace);
  // Fills the inputs with check values, runs once, and returns how many
  // result elements on this rank are wrong.
  long long check(bool inPlace);

 private:
  void fillInputs(bool inPlace);
  long long countWrong(bool inPlace);
  char* inputFor(bool inPlace);
  char* outputFor(bool inPlace);
  // Where the collective reads or writes `host` (a pointer into input_ or
  // output_): there, or at the same offset of its device copy.
  char* onDevice(char* host);
  double expected(size_t i) const;

  comm::Communicator& comm_;
  Collective collective_;
  comm::DataType type_;
  comm::ReduceOp op_;
  int root_;
  size_t count_ = 0;  // reported elements
  size_t block_ = 0;  // elements per rank block (the API's count)
  std::vector<char> input_;
  std::vector<char> output_;
  DeviceMemory* device_;
  char* deviceInput_ = nullptr;
  char* deviceOutput_ = nullptr;
};

}  // namespace distrun::comm_bench
