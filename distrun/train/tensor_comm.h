#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "distrun/comm/communicator.h"

// Tensors and small values over a distrun Communicator. Collective: every
// rank calls each function in the same order.
namespace distrun::train {

// The communicator's type for a tensor's; UsageError naming `what` for a
// type it cannot carry (bool, uint8, int8, int16, complex).
comm::DataType dataTypeOf(torch::ScalarType type, const std::string& what);

// In place, from `root`, for any layout (non-contiguous tensors go through
// a contiguous copy).
void broadcastTensor(comm::Communicator& comm, const torch::Tensor& tensor, int root,
                     const std::string& what = "tensor");
// In-place all-reduce of a contiguous tensor: now, or started (Async).
void allreduceTensor(comm::Communicator& comm, const torch::Tensor& tensor, comm::ReduceOp op);
comm::Work allreduceTensorAsync(comm::Communicator& comm, const torch::Tensor& tensor,
                                comm::ReduceOp op);
// Every rank's value, indexed by rank.
std::vector<int64_t> allgatherValue(comm::Communicator& comm, int64_t value);
// Root's value on every rank.
int64_t broadcastValue(comm::Communicator& comm, int64_t value, int root);
// Root's string on every rank.
std::string broadcastString(comm::Communicator& comm, const std::string& text, int root);
// Every rank's string, indexed by rank.
std::vector<std::string> allgatherString(comm::Communicator& comm, const std::string& text);
// Sums doubles over ranks (in place).
void allreduceSum(comm::Communicator& comm, std::vector<double>& values);

}  // namespace distrun::train
