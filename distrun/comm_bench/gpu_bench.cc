#include "distrun/comm_bench/gpu_bench.h"

#include <array>

#include <fmt/format.h>

#include "distrun/comm/gpu/gpu_runtime.h"
#include "distrun/comm/gpu/on_host_communicator.h"
#include "distrun/comm/gpu/staged_communicator.h"
#include "distrun/comm_bench/device_memory.h"

namespace distrun::comm_bench {
namespace {

using comm::gpu::GpuRuntime;

class GpuMemory final : public DeviceMemory {
 public:
  GpuMemory(const GpuRuntime& gpu, int device) : gpu_(gpu), device_(device) {}
  char* allocate(size_t bytes) override {
    void* p = nullptr;
    gpu_.check(gpu_.setDevice(device_), "cudaSetDevice");
    gpu_.check(gpu_.malloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
    return static_cast<char*>(p);
  }
  void release(char* device) noexcept override {
    if (device != nullptr) gpu_.free(device);
  }
  void upload(char* device, const char* host, size_t bytes) override {
    gpu_.check(gpu_.memcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void download(char* host, const char* device, size_t bytes) override {
    gpu_.check(gpu_.memcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }
  void copy(char* to, const char* from, size_t bytes) override {
    gpu_.check(gpu_.memcpy(to, from, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  }
  std::string describe() const override {
    std::array<char, 32> bus{};
    const bool known =
        gpu_.deviceGetPciBusId(bus.data(), static_cast<int>(bus.size()), device_) == cudaSuccess;
    return gpu_.deviceName(device_) + (known ? fmt::format(" [{}]", bus.data()) : "");
  }

 private:
  const GpuRuntime& gpu_;
  int device_;
};

// nccl or rccl: the collectives on the device, the timings through the
// same communicator, copied to the GPU and back.
class NcclBench final : public GpuBench {
 public:
  NcclBench(std::unique_ptr<comm::Communicator> nccl, const GpuRuntime& gpu, int device)
      : nccl_(std::move(nccl)), control_(*nccl_, gpu, device), memory_(gpu, device) {}
  BenchTarget target() override { return {*nccl_, control_, &memory_}; }

 private:
  std::unique_ptr<comm::Communicator> nccl_;
  comm::gpu::OnHostCommunicator control_;
  GpuMemory memory_;
};

// gloo on device buffers through pinned host memory; the timings go
// through gloo itself.
class StagedBench final : public GpuBench {
 public:
  StagedBench(std::unique_ptr<comm::Communicator> host, const GpuRuntime& gpu, int device)
      : host_(std::move(host)),
        staged_(*host_, gpu, comm::gpu::StagedOptions{device, 4u << 20}),
        memory_(gpu, device) {}
  BenchTarget target() override { return {staged_, *host_, &memory_}; }

 private:
  std::unique_ptr<comm::Communicator> host_;
  comm::gpu::StagedCommunicator staged_;
  GpuMemory memory_;
};

}  // namespace

std::unique_ptr<GpuBench> connectGpuBench(const Environment& env, const std::string& backend,
                                          const comm::ConnectOptions& options) {
  const GpuRuntime& gpu = comm::gpu::loadGpuRuntime(env, comm::gpu::vendorOf(backend));
  const int device = gpu.deviceOf(env);
  comm::ConnectOptions connect = options;
  connect.backend = backend;
  if (backend == "nccl" || backend == "rccl") {
    return std::make_unique<NcclBench>(comm::connect(env, connect), gpu, device);
  }
  return std::make_unique<StagedBench>(comm::connect(env, connect), gpu, device);
}

int visibleGpus(const Environment& env, const std::string& backend) {
  return comm::gpu::loadGpuRuntime(env, comm::gpu::vendorOf(backend)).deviceCount();
}

}  // namespace distrun::comm_bench
