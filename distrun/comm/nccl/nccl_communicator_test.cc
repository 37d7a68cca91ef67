// The nccl backend through connect(): on a machine without a GPU, the one
// line that says so; on a GPU, the Communicator contract at world size 1,
// its buffers staged to the device (the contract checks host memory).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <algorithm>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "distrun/comm/connect.h"
#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/nccl/nccl_communicator.h"
#include "distrun/comm/testing/contract.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/common/system.h"

namespace distrun::comm::nccl {
namespace {

using ::testing::HasSubstr;

MapEnvironment oneRank() {
  return MapEnvironment{{"RANK", "0"},
                        {"WORLD_SIZE", "1"},
                        {"LOCAL_RANK", "0"},
                        {"LOCAL_WORLD_SIZE", "1"},
                        {"MASTER_ADDR", "127.0.0.1"},
                        {"MASTER_PORT", std::to_string(pickFreeTcpPort())},
                        {"DISTRUN_TOKEN", "nccl-test"}};
}

// Why this machine cannot run NCCL, or "" where it has a GPU.
std::string noGpu() {
  const gpu::GpuRuntime& cuda = gpu::loadGpuRuntime(MapEnvironment{}, gpu::GpuVendor::kNvidia);
  int visible = 0;
  const cudaError_t result = cuda.getDeviceCount(&visible);
  if (result == cudaSuccess && visible > 0) return "";
  return fmt::format("no GPU here (cudaGetDeviceCount: {})",
                     result == cudaSuccess ? "0 devices" : cuda.getErrorString(result));
}

TEST(NcclConnectTest, WithoutAGpuConnectIsOneConfigErrorSayingSo) {
  if (noGpu().empty()) GTEST_SKIP() << "this machine has a GPU";
  ConnectOptions options;
  options.backend = "nccl";
  try {
    connect(oneRank(), options);
    ADD_FAILURE() << "connected without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("this process sees no GPU (cudaGetDeviceCount: "));
  }
}

TEST(NcclConnectTest, AMissingNcclStopsConnectBeforeTheStore) {
  MapEnvironment env = oneRank();
  env.set("DISTRUN_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  env.set("MASTER_ADDR", "192.0.2.1");  // never reached: the library is loaded first
  ConnectOptions options;
  options.backend = "nccl";
  options.timeout = std::chrono::seconds(1);
  try {
    connect(env, options);
    ADD_FAILURE() << "connected without NCCL";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("NCCL (for the nccl backend) could not be loaded"));
  }
}

// A communicator on host memory over one on device memory: each call's
// buffers are copied to the GPU (one buffer where they overlap, so in-place
// stays in place), run there, and copied back.
class DeviceStaged final : public Communicator {
 public:
  DeviceStaged(std::unique_ptr<Communicator> device, const gpu::GpuRuntime& gpu)
      : Communicator(device->rank(), device->size()), device_(std::move(device)), gpu_(gpu) {}
  ~DeviceStaged() override { shutdown(); }
  std::string_view backend() const override { return device_->backend(); }

 protected:
  bool averagesNatively() const override { return true; }
  void doAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) override {
    const size_t bytes = count * sizeOf(type);
    staged(in, bytes, out, bytes, [&](const void* i, void* o) {
      device_->allreduce(i, o, count, type, op);
    });
  }
  void doBroadcast(const void* in, void* out, size_t count, DataType type, int root) override {
    const size_t bytes = count * sizeOf(type);
    staged(rank() == root ? in : nullptr, bytes, out, bytes,
           [&](const void* i, void* o) { device_->broadcast(i, o, count, type, root); });
  }
  void doAllgather(const void* in, void* out, size_t count, DataType type) override {
    const size_t bytes = count * sizeOf(type);
    staged(in, bytes, out, bytes * static_cast<size_t>(size()),
           [&](const void* i, void* o) { device_->allgather(i, o, count, type); });
  }
  void doReduceScatter(const void* in, void* out, size_t count, DataType type,
                       ReduceOp op) override {
    const size_t bytes = count * sizeOf(type);
    staged(in, bytes * static_cast<size_t>(size()), out, bytes,
           [&](const void* i, void* o) { device_->reduceScatter(i, o, count, type, op); });
  }
  void doAlltoall(const void* in, void* out, size_t count, DataType type) override {
    const size_t bytes = count * sizeOf(type) * static_cast<size_t>(size());
    staged(in, bytes, out, bytes,
           [&](const void* i, void* o) { device_->alltoall(i, o, count, type); });
  }
  void doSend(const void* data, size_t count, DataType type, int peer, int tag) override {
    staged(data, count * sizeOf(type), nullptr, 0,
           [&](const void* i, void*) { device_->send(i, count, type, peer, tag); });
  }
  void doRecv(void* data, size_t count, DataType type, int peer, int tag) override {
    staged(nullptr, 0, data, count * sizeOf(type),
           [&](const void*, void* o) { device_->recv(o, count, type, peer, tag); });
  }
  void doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                  DataType type, int tag) override {
    const size_t bytes = count * sizeOf(type);
    staged(sendData, bytes, recvData, bytes, [&](const void* i, void* o) {
      device_->sendRecv(i, sendPeer, o, recvPeer, count, type, tag);
    });
  }
  void doBarrier() override { device_->barrier(); }

 private:
  template <class Run>
  void staged(const void* in, size_t inBytes, void* out, size_t outBytes, Run run) {
    const char* lo = nullptr;
    const char* hi = nullptr;
    for (auto [p, n] : {std::pair{static_cast<const char*>(in), inBytes},
                        std::pair{static_cast<const char*>(out), outBytes}}) {
      if (p == nullptr || n == 0) continue;
      lo = lo == nullptr ? p : std::min(lo, p);
      hi = hi == nullptr ? p + n : std::max(hi, p + n);
    }
    const bool overlap = in != nullptr && out != nullptr &&
                         static_cast<const char*>(in) < static_cast<const char*>(out) + outBytes &&
                         static_cast<const char*>(out) < static_cast<const char*>(in) + inBytes;
    if (overlap) {
      char* span = mirror(lo, static_cast<size_t>(hi - lo));
      run(span + (static_cast<const char*>(in) - lo), span + (static_cast<char*>(out) - lo));
      back(span, const_cast<char*>(lo), static_cast<size_t>(hi - lo));
      return;
    }
    char* dIn = in != nullptr ? mirror(static_cast<const char*>(in), inBytes) : nullptr;
    char* dOut = out != nullptr ? mirror(static_cast<const char*>(out), outBytes) : nullptr;
    run(dIn, dOut);
    if (dOut != nullptr) back(dOut, static_cast<char*>(out), outBytes);
    if (dIn != nullptr) gpu_.free(dIn);
  }
  char* mirror(const char* host, size_t bytes) {
    void* device = nullptr;
    gpu_.check(gpu_.malloc(&device, std::max<size_t>(bytes, 1)), "cudaMalloc");
    gpu_.check(gpu_.memcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    return static_cast<char*>(device);
  }
  void back(char* device, char* host, size_t bytes) {
    gpu_.check(gpu_.memcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    gpu_.free(device);
  }
  std::unique_ptr<Communicator> device_;
  const gpu::GpuRuntime& gpu_;
};

TEST(NcclContractTest, OneRankOnOneGpuKeepsTheCommunicatorContract) {
  if (const std::string why = noGpu(); !why.empty()) GTEST_SKIP() << why;
  ConnectOptions options;
  options.backend = "nccl";
  std::unique_ptr<Communicator> nccl = connect(oneRank(), options);
  EXPECT_EQ(nccl->backend(), "nccl");
  EXPECT_THAT(nccl->transport(), HasSubstr(" on cuda:0"));
  DeviceStaged comm(std::move(nccl), gpu::loadGpuRuntime(MapEnvironment{}, gpu::GpuVendor::kNvidia));
  for (const std::string& failure : testing::checkContract(comm)) ADD_FAILURE() << failure;
}

}  // namespace
}  // namespace distrun::comm::nccl
