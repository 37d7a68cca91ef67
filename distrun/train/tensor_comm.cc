#include "distrun/train/tensor_comm.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"

namespace distrun::train {

namespace {

// Strings travel as int64 words.
std::vector<int64_t> toWords(const std::string& text, size_t words) {
  std::vector<int64_t> out(words, 0);
  std::memcpy(out.data(), text.data(), text.size());
  return out;
}

size_t wordsFor(size_t bytes) { return (bytes + sizeof(int64_t) - 1) / sizeof(int64_t); }

}  // namespace

comm::DataType dataTypeOf(torch::ScalarType type, const std::string& what) {
  switch (type) {
    case torch::kFloat:
      return comm::DataType::kFloat32;
    case torch::kDouble:
      return comm::DataType::kFloat64;
    case torch::kHalf:
      return comm::DataType::kFloat16;
    case torch::kBFloat16:
      return comm::DataType::kBFloat16;
    case torch::kInt:
      return comm::DataType::kInt32;
    case torch::kLong:
      return comm::DataType::kInt64;
    default:
      throw UsageError(
          fmt::format("{} has type {}, which the communicator cannot carry: expected "
                      "float32, float64, float16, bfloat16, int32 or int64",
                      what, c10::toString(type)));
  }
}

void broadcastTensor(comm::Communicator& comm, const torch::Tensor& tensor, int root,
                     const std::string& what) {
  const comm::DataType type = dataTypeOf(tensor.scalar_type(), what);
  torch::Tensor flat = tensor.is_contiguous() ? tensor : tensor.contiguous();
  comm.broadcast(flat.data_ptr(), flat.data_ptr(), static_cast<size_t>(flat.numel()), type, root);
  if (!flat.is_same(tensor)) tensor.copy_(flat);
}

namespace {

// The tensor's buffer, element count and type for the communicator.
struct Contiguous {
  void* data;
  size_t count;
  comm::DataType type;
};

Contiguous contiguousOf(const torch::Tensor& tensor) {
  DISTRUN_ENFORCE(tensor.is_contiguous(), "all-reduce of a non-contiguous tensor");
  return {tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
          dataTypeOf(tensor.scalar_type(), "gradient bucket")};
}

}  // namespace

void allreduceTensor(comm::Communicator& comm, const torch::Tensor& tensor, comm::ReduceOp op) {
  const Contiguous t = contiguousOf(tensor);
  comm.allreduce(t.data, t.data, t.count, t.type, op);
}

comm::Work allreduceTensorAsync(comm::Communicator& comm, const torch::Tensor& tensor,
                                comm::ReduceOp op) {
  const Contiguous t = contiguousOf(tensor);
  return comm.allreduceAsync(t.data, t.data, t.count, t.type, op);
}

std::vector<int64_t> allgatherValue(comm::Communicator& comm, int64_t value) {
  std::vector<int64_t> all(static_cast<size_t>(comm.size()));
  comm.allgather(&value, all.data(), 1, comm::DataType::kInt64);
  return all;
}

int64_t broadcastValue(comm::Communicator& comm, int64_t value, int root) {
  comm.broadcast(&value, &value, 1, comm::DataType::kInt64, root);
  return value;
}

std::string broadcastString(comm::Communicator& comm, const std::string& text, int root) {
  const auto bytes =
      static_cast<size_t>(broadcastValue(comm, static_cast<int64_t>(text.size()), root));
  std::vector<int64_t> words = toWords(comm.rank() == root ? text : "", wordsFor(bytes));
  comm.broadcast(words.data(), words.data(), words.size(), comm::DataType::kInt64, root);
  return std::string(reinterpret_cast<const char*>(words.data()), bytes);
}

std::vector<std::string> allgatherString(comm::Communicator& comm, const std::string& text) {
  const std::vector<int64_t> sizes = allgatherValue(comm, static_cast<int64_t>(text.size()));
  const size_t words = wordsFor(static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end())));
  std::vector<int64_t> mine = toWords(text, words);
  std::vector<int64_t> all(words * sizes.size());
  comm.allgather(mine.data(), all.data(), words, comm::DataType::kInt64);
  std::vector<std::string> out;
  for (size_t r = 0; r < sizes.size(); ++r) {
    out.emplace_back(reinterpret_cast<const char*>(all.data() + r * words),
                     static_cast<size_t>(sizes[r]));
  }
  return out;
}

void allreduceSum(comm::Communicator& comm, std::vector<double>& values) {
  comm.allreduce(values.data(), values.data(), values.size(), comm::DataType::kFloat64,
                 comm::ReduceOp::kSum);
}

}  // namespace distrun::train
