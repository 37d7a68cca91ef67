#include "distrun/comm_bench/collectives.h"

#include <fmt/format.h>

#include "distrun/comm/check_values.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::comm_bench {

using comm::DataType;
using comm::ReduceOp;

namespace {

struct Entry {
  Collective collective;
  std::string_view name;
  std::string_view alias;
};

constexpr Entry kEntries[] = {
    {Collective::kAllreduce, "all_reduce", "allreduce"},
    {Collective::kBroadcast, "broadcast", "bcast"},
    {Collective::kAllgather, "all_gather", "allgather"},
    {Collective::kReduceScatter, "reduce_scatter", "reducescatter"},
    {Collective::kAlltoall, "alltoall", "all_to_all"},
    {Collective::kSendRecv, "sendrecv", "send_recv"},
};

// Whether the reported size is the whole array of size() blocks.
bool isBlocked(Collective c) {
  return c == Collective::kAllgather || c == Collective::kReduceScatter ||
         c == Collective::kAlltoall;
}

}  // namespace

std::string_view nameOf(Collective c) {
  for (const Entry& e : kEntries) {
    if (e.collective == c) return e.name;
  }
  return "?";
}

std::vector<std::string> collectiveNames() {
  std::vector<std::string> names;
  for (const Entry& e : kEntries) names.emplace_back(e.name);
  return names;
}

Collective parseCollective(std::string_view text) {
  for (const Entry& e : kEntries) {
    if (text == e.name || text == e.alias) return e.collective;
  }
  throw UsageError(
      fmt::format("COLLECTIVE '{}' is not one of: {}, pi", text, join(collectiveNames(), ", ")));
}

bool takesReduceOp(Collective c) {
  return c == Collective::kAllreduce || c == Collective::kReduceScatter;
}

bool takesRoot(Collective c) { return c == Collective::kBroadcast; }

double busBandwidthFactor(Collective c, int ranks) {
  const double n = ranks;
  switch (c) {
    case Collective::kAllreduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kAlltoall:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

CollectiveRun::CollectiveRun(comm::Communicator& comm, Collective c, size_t bytes, DataType type,
                             ReduceOp op, int root, DeviceMemory* device)
    : comm_(comm), collective_(c), type_(type), op_(op), root_(root), device_(device) {
  const size_t ranks = static_cast<size_t>(comm.size());
  const size_t elements = bytes / comm::sizeOf(type);
  block_ = isBlocked(c) ? elements / ranks : elements;
  count_ = isBlocked(c) ? block_ * ranks : elements;
  const size_t inputElements = isBlocked(c) && c != Collective::kAllgather ? count_ : block_;
  const size_t outputElements = c == Collective::kReduceScatter ? block_ : count_;
  input_.assign(std::max<size_t>(inputElements, 1) * comm::sizeOf(type), 0);
  output_.assign(std::max<size_t>(outputElements, 1) * comm::sizeOf(type), 0);
  if (device_ != nullptr) {
    deviceInput_ = device_->allocate(input_.size());
    try {
      deviceOutput_ = device_->allocate(output_.size());
      // Zeros, as the host arrays start: the timed loop reduces them.
      device_->upload(deviceInput_, input_.data(), input_.size());
      device_->upload(deviceOutput_, output_.data(), output_.size());
    } catch (...) {
      device_->release(deviceInput_);
      device_->release(deviceOutput_);
      throw;
    }
  }
}

CollectiveRun::~CollectiveRun() {
  if (device_ == nullptr) return;
  device_->release(deviceInput_);
  device_->release(deviceOutput_);
}

char* CollectiveRun::onDevice(char* host) {
  if (device_ == nullptr) return host;
  if (host >= input_.data() && host < input_.data() + input_.size()) {
    return deviceInput_ + (host - input_.data());
  }
  return deviceOutput_ + (host - output_.data());
}

// In-place positions follow communicator.h: the output's own block for
// allgather, the input's own block for reduce_scatter, one buffer otherwise.
char* CollectiveRun::inputFor(bool inPlace) {
  if (!inPlace) return input_.data();
  if (collective_ == Collective::kAllgather) {
    return output_.data() + block_ * comm::sizeOf(type_) * static_cast<size_t>(comm_.rank());
  }
  if (collective_ == Collective::kReduceScatter || collective_ == Collective::kAlltoall) {
    return input_.data();
  }
  return output_.data();
}

char* CollectiveRun::outputFor(bool inPlace) {
  if (inPlace && collective_ == Collective::kReduceScatter) {
    return input_.data() + block_ * comm::sizeOf(type_) * static_cast<size_t>(comm_.rank());
  }
  if (inPlace && collective_ == Collective::kAlltoall) return input_.data();
  return output_.data();
}

void CollectiveRun::run(bool inPlace) {
  char* in = onDevice(inputFor(inPlace));
  char* out = onDevice(outputFor(inPlace));
  const int rank = comm_.rank();
  const int size = comm_.size();
  switch (collective_) {
    case Collective::kAllreduce:
      return comm_.allreduce(in, out, block_, type_, op_);
    case Collective::kBroadcast:
      return comm_.broadcast(in, out, block_, type_, root_);
    case Collective::kAllgather:
      return comm_.allgather(in, out, block_, type_);
    case Collective::kReduceScatter:
      return comm_.reduceScatter(in, out, block_, type_, op_);
    case Collective::kAlltoall:
      return comm_.alltoall(in, out, block_, type_);
    case Collective::kSendRecv:
      // A ring shift between two buffers in both halves of the table (a
      // rank cannot send and receive in one buffer); a world of one copies.
      if (size == 1) {
        if (device_ != nullptr) return device_->copy(deviceOutput_, deviceInput_, input_.size());
        std::copy(input_.begin(), input_.end(), output_.begin());
        return;
      }
      return comm_.sendRecv(onDevice(input_.data()), (rank + 1) % size, onDevice(output_.data()),
                            (rank + size - 1) % size, block_, type_, 0);
  }
}

void CollectiveRun::fillInputs(bool inPlace) {
  char* in = inputFor(inPlace);
  const size_t n = collective_ == Collective::kReduceScatter || collective_ == Collective::kAlltoall
                       ? count_
                       : block_;
  const int rank = comm_.rank();
  for (size_t i = 0; i < n; ++i) {
    const double v = takesReduceOp(collective_) ? comm::reductionInput(op_, rank, comm_.size(), i)
                                                : comm::markerValue(rank, i);
    comm::storeValue(type_, collective_ == Collective::kSendRecv ? input_.data() : in, i, v);
  }
}

double CollectiveRun::expected(size_t i) const {
  const int rank = comm_.rank();
  const int size = comm_.size();
  switch (collective_) {
    case Collective::kAllreduce:
      return comm::reductionResult(op_, type_, size, i);
    case Collective::kReduceScatter:
      return comm::reductionResult(op_, type_, size, block_ * static_cast<size_t>(rank) + i);
    case Collective::kBroadcast:
      return comm::markerValue(root_, i);
    case Collective::kAllgather:
      return comm::markerValue(static_cast<int>(i / block_), i % block_);
    case Collective::kAlltoall:
      // Rank r's block `rank` holds elements rank*block .. of r's input.
      return comm::markerValue(static_cast<int>(i / block_),
                               block_ * static_cast<size_t>(rank) + i % block_);
    case Collective::kSendRecv:
      return comm::markerValue(size == 1 ? rank : (rank + size - 1) % size, i);
  }
  return 0;
}

long long CollectiveRun::countWrong(bool inPlace) {
  const char* out = outputFor(inPlace);
  if (collective_ == Collective::kSendRecv) out = output_.data();
  const size_t n = collective_ == Collective::kReduceScatter ? block_ : count_;
  long long wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    wrong += !comm::matches(type_, comm::loadValue(type_, out, i), expected(i));
  }
  return wrong;
}

long long CollectiveRun::check(bool inPlace) {
  std::fill(input_.begin(), input_.end(), 0);
  std::fill(output_.begin(), output_.end(), 0);
  fillInputs(inPlace);
  if (device_ != nullptr) {
    device_->upload(deviceInput_, input_.data(), input_.size());
    device_->upload(deviceOutput_, output_.data(), output_.size());
  }
  run(inPlace);
  if (device_ != nullptr) {
    device_->download(input_.data(), deviceInput_, input_.size());
    device_->download(output_.data(), deviceOutput_, output_.size());
  }
  return countWrong(inPlace);
}

}  // namespace distrun::comm_bench
