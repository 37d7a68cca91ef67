#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/comm/testing/contract.h"
#include "distrun/comm_bench/collectives.h"
#include "distrun/comm_bench/options.h"
#include "distrun/comm_bench/report.h"
#include "distrun/comm_bench/runner.h"
#include "distrun/common/error.h"
#include "distrun/config.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::comm_bench {
namespace {

using ::testing::HasSubstr;

// A fixed report: two rows of allreduce, one with -c 0 (N/A).
BenchReport goldenReport() {
  BenchReport r;
  r.collective = "all_reduce";
  r.backend = "gloo";
  r.transport = "shared memory within each of 2 nodes, tcp between them";
  r.reductions = "avx2, avx512 for half and bfloat16";
  r.version = "0.1.0";
  r.ranks = 4;
  r.minBytes = 1024;
  r.maxBytes = 1 << 30;
  r.stepFactor = 1024 * 1024;
  r.warmupIters = 5;
  r.iters = 20;
  r.checkIters = 1;
  r.average = 1;
  r.rankInfo = {{0, 4711, "node1"}, {1, 4712, "node1"}, {2, 815, "node2"}, {3, 816, "node2"}};
  r.rows.push_back(
      {1024, 256, "float", "sum", -1, {35.125, 0.0292, 0.0437, 0}, {33.5, 0.0306, 0.0459, 0}});
  r.rows.push_back({1 << 30,
                    1 << 28,
                    "float",
                    "sum",
                    -1,
                    {2345678.9, 0.4577, 0.6866, std::nullopt},
                    {12345.67, 86.97, 130.46, std::nullopt}});
  return r;
}

// Compares with distrun/comm_bench/testdata/NAME; DISTRUN_UPDATE_GOLDEN=1
// rewrites the file instead (then review the diff).
void expectGolden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(DISTRUN_SOURCE_DIR) + "/distrun/comm_bench/testdata/" + name;
  if (std::getenv("DISTRUN_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(actual, text.str()) << "golden file " << path;
}

TEST(ReportTest, TableMatchesGolden) {
  std::ostringstream out;
  writeTable(out, goldenReport());
  expectGolden("report_table.txt", out.str());
}

TEST(ReportTest, JsonMatchesGolden) {
  std::ostringstream out;
  writeJson(out, goldenReport());
  expectGolden("report.json", out.str());
}

TEST(ReportTest, CsvMatchesGolden) {
  std::ostringstream out;
  writeCsv(out, goldenReport());
  expectGolden("report.csv", out.str());
}

TEST(ReportTest, WrongValuesFailTheFooter) {
  BenchReport r = goldenReport();
  r.rows[0].inPlace.wrong = 3;
  std::ostringstream out;
  writeTable(out, r);
  EXPECT_THAT(out.str(), HasSubstr("# Out of bounds values : 3 FAILED\n"));
  EXPECT_EQ(r.wrongTotal(), 3);
}

TEST(ReportTest, TimesAreFormattedAsNcclTests) {
  EXPECT_EQ(formatTime(35.125), "  35.12");
  EXPECT_EQ(formatTime(12345.67), "12345.7");
  EXPECT_EQ(formatTime(2345678.9), "2345679");
}

TEST(OptionsTest, SizesAndSweeps) {
  EXPECT_EQ(parseBytes("64", "-b"), 64u);
  EXPECT_EQ(parseBytes("4K", "-b"), 4096u);
  EXPECT_EQ(parseBytes("2M", "-e"), 2u << 20);
  EXPECT_EQ(parseBytes("1G", "-e"), 1u << 30);
  try {
    parseBytes("1T", "-e");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "-e '1T' is not a size (expected a number with an optional K, M or G suffix)");
  }
  BenchOptions o;
  o.minBytes = 1024;
  o.maxBytes = 8192;
  EXPECT_EQ(sweepSizes(o), (std::vector<size_t>{1024, 2048, 4096, 8192}));
  o.stepFactor = 0;
  o.stepBytes = 3000;
  EXPECT_EQ(sweepSizes(o), (std::vector<size_t>{1024, 4024, 7024}));
  o.minBytes = 9000;
  EXPECT_THROW(validate(o), UsageError);
}

std::string validationError(const std::function<void(BenchOptions&)>& change) {
  BenchOptions o;
  change(o);
  try {
    validate(o);
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kUsage);
    return e.what();
  }
  return "(valid)";
}

TEST(OptionsTest, ContradictionsNameTheFlag) {
  EXPECT_EQ(validationError([](BenchOptions& o) { o.minBytes = 2048, o.maxBytes = 1024; }),
            "-b 2048 is above -e 1024");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.stepFactor = 0, o.stepBytes = 0; }),
            "-i 0 with no -f above 1 would never reach -e");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.iters = 0; }), "-n 0 must be at least 1");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.warmupIters = -1; }), "-w -1 is negative");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.checkIters = -2; }), "-c -2 is negative");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.average = 4; }),
            "-a 4 is not 0 (rank 0), 1 (mean), 2 (min) or 3 (max)");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.format = "yaml"; }),
            "--format 'yaml' is not table, json or csv");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.nprocPerNode = 0; }),
            "--nproc-per-node 0 must be at least 1");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.timeoutSeconds = 0; }),
            "-T 0 must be at least 1");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.piIntervals = 0; }),
            "--intervals 0 must be at least 1");
  EXPECT_EQ(
      validationError([](BenchOptions& o) { o.minBytes = 0, o.stepFactor = 0, o.stepBytes = 1; }),
      "-b/-e/-i/-f give more than 4096 sizes; raise -i or -f");
  EXPECT_EQ(validationError([](BenchOptions&) {}), "(valid)");
}

TEST(CollectivesTest, NamesAndBusBandwidthFactors) {
  EXPECT_EQ(parseCollective("allreduce"), Collective::kAllreduce);
  EXPECT_EQ(parseCollective("reduce_scatter"), Collective::kReduceScatter);
  EXPECT_THROW(parseCollective("hypercube"), UsageError);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kReduceScatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAlltoall, 8), 0.875);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kSendRecv, 8), 1.0);
}

// Every collective, measured by ranks as threads: all checks pass, rows
// have nccl-tests' sizes, and every rank gets the same report.
TEST(RunnerTest, EveryCollectiveChecksOutClean) {
  for (const std::string& name : collectiveNames()) {
    BenchOptions o;
    o.collective = name;
    o.minBytes = 0;
    o.maxBytes = 4096;
    o.stepFactor = 8;
    o.iters = 2;
    o.warmupIters = 1;
    o.types = {comm::DataType::kFloat32, comm::DataType::kInt64, comm::DataType::kBFloat16};
    o.ops = {comm::ReduceOp::kSum, comm::ReduceOp::kAvg};
    std::vector<BenchReport> reports(3);
    auto errors = comm::testing::runGlooThreads(3, [&](comm::Communicator& c) {
      reports[static_cast<size_t>(c.rank())] = runCollectiveBench(c, o);
    });
    EXPECT_EQ(errors, std::vector<std::string>(3, "")) << name;
    const BenchReport& r = reports[0];
    EXPECT_EQ(r.wrongTotal(), 0) << name;
    ASSERT_FALSE(r.rows.empty());
    for (const ResultRow& row : r.rows) {
      ASSERT_TRUE(row.outOfPlace.wrong.has_value());
      if (name == "all_gather" || name == "reduce_scatter" || name == "alltoall") {
        EXPECT_EQ(row.count % 3, 0u) << name;
      }
    }
    EXPECT_EQ(reports[2].rows.size(), r.rows.size());
    EXPECT_EQ(r.rankInfo.size(), 3u);
  }
}

// Device memory that is heap memory: enough for the runner's device path
// (its own copies of the buffers, filled and read back through upload and
// download). A run on the host arrays instead would read back the zeros
// uploaded before it and count wrong.
class HeapDeviceMemory final : public DeviceMemory {
 public:
  // Filled with a pattern, as device memory holds whatever was there: the
  // runner must upload before it reduces (UBSan sees int64 sums of it overflow).
  char* allocate(size_t bytes) override {
    char* p = new char[bytes];
    std::memset(p, 0xbe, bytes);
    return p;
  }
  void release(char* device) noexcept override { delete[] device; }
  void upload(char* device, const char* host, size_t bytes) override {
    std::memcpy(device, host, bytes);
  }
  void download(char* host, const char* device, size_t bytes) override {
    std::memcpy(host, device, bytes);
  }
  void copy(char* to, const char* from, size_t bytes) override { std::memcpy(to, from, bytes); }
  std::string describe() const override { return "heap:0"; }
};

TEST(RunnerTest, OnDeviceMemoryEveryCollectiveChecksOutClean) {
  for (const std::string& name : collectiveNames()) {
    BenchOptions o;
    o.collective = name;
    o.minBytes = 64;
    o.maxBytes = 4096;
    o.stepFactor = 8;
    o.iters = 2;
    o.warmupIters = 1;
    o.types = {comm::DataType::kFloat32, comm::DataType::kInt64};
    o.ops = {comm::ReduceOp::kSum, comm::ReduceOp::kAvg};
    std::vector<BenchReport> reports(3);
    auto errors = comm::testing::runGlooThreads(3, [&](comm::Communicator& c) {
      HeapDeviceMemory memory;
      reports[static_cast<size_t>(c.rank())] = runCollectiveBench(BenchTarget{c, c, &memory}, o);
    });
    EXPECT_EQ(errors, std::vector<std::string>(3, "")) << name;
    EXPECT_EQ(reports[0].wrongTotal(), 0) << name;
    ASSERT_EQ(reports[0].rankInfo.size(), 3u);
    EXPECT_EQ(reports[0].rankInfo[2].device, "heap:0");
  }
}

TEST(OptionsTest, DeviceAndBackendGoTogether) {
  EXPECT_EQ(
      validationError([](BenchOptions& o) { o.backend = "nccl"; }),
      "--backend nccl moves GPU memory: add --device cuda (or use --backend gloo on the CPU)");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.device = "tpu"; }),
            "--device 'tpu' is not cpu or cuda");
  if (!DISTRUN_WITH_NCCL) {
    EXPECT_THAT(validationError([](BenchOptions& o) { o.device = "cuda"; }),
                HasSubstr("--device cuda: this distrun was built without NCCL"));
    return;
  }
  EXPECT_EQ(validationError([](BenchOptions& o) { o.device = "cuda", o.backend = "mpi"; }),
            "--backend mpi with --device cuda: expected auto (nccl), nccl, rccl or gloo (staged "
            "through host memory)");
  EXPECT_EQ(validationError([](BenchOptions& o) { o.device = "cuda", o.collective = "pi"; }),
            "pi runs on the CPU: drop --device cuda");
  for (const char* backend : {"auto", "nccl", "rccl", "gloo"}) {
    EXPECT_EQ(validationError([&](BenchOptions& o) { o.device = "cuda", o.backend = backend; }),
              "(valid)");
  }
  BenchOptions cuda;
  cuda.device = "cuda";
  EXPECT_EQ(benchBackend(cuda), "nccl");
  EXPECT_EQ(benchBackend(BenchOptions{}), "auto");
}

// A broken backend of one rank: returns zeros for arrays (single values,
// such as the runner's own tallies, pass through as a world of one would).
class ZeroingCommunicator : public comm::Communicator {
 public:
  ZeroingCommunicator() : Communicator(0, 1) {}
  std::string_view backend() const override { return "zeros"; }

 protected:
  void doAllreduce(const void* in, void* out, size_t n, comm::DataType t, comm::ReduceOp) override {
    if (n == 1) {
      std::memmove(out, in, comm::sizeOf(t));
    } else {
      std::memset(out, 0, n * comm::sizeOf(t));
    }
  }
  void doBroadcast(const void*, void*, size_t, comm::DataType, int) override {}
  void doAllgather(const void*, void*, size_t, comm::DataType) override {}
  void doReduceScatter(const void*, void*, size_t, comm::DataType, comm::ReduceOp) override {}
  void doAlltoall(const void*, void*, size_t, comm::DataType) override {}
  void doSend(const void*, size_t, comm::DataType, int, int) override {}
  void doRecv(void*, size_t, comm::DataType, int, int) override {}
  void doSendRecv(const void*, int, void*, int, size_t, comm::DataType, int) override {}
  void doBarrier() override {}
};

TEST(RunnerTest, WrongResultsAreCounted) {
  ZeroingCommunicator zeros;
  CollectiveRun run(zeros, Collective::kAllreduce, 64, comm::DataType::kInt32, comm::ReduceOp::kSum,
                    0);
  // One rank's sum inputs are (3i mod 5) - 2: zero only at i = 4, 9, 14.
  EXPECT_EQ(run.check(false), 13);
  EXPECT_EQ(run.count(), 16u);
  BenchOptions o;
  o.collective = "all_reduce";
  o.minBytes = o.maxBytes = 64;
  o.types = {comm::DataType::kInt32};
  BenchReport r = runCollectiveBench(zeros, o);
  EXPECT_EQ(r.wrongTotal(), 26);  // out-of-place and in-place
}

TEST(PiTest, TrapezoidRuleAcrossRanks) {
  std::vector<PiResult> results(3);
  auto errors = comm::testing::runGlooThreads(3, [&](comm::Communicator& c) {
    results[static_cast<size_t>(c.rank())] = computePi(c, 1'000'000);
  });
  EXPECT_EQ(errors, std::vector<std::string>(3, ""));
  EXPECT_LT(results[0].error, 1e-10);
  EXPECT_EQ(results[1].value, results[0].value);
  std::ostringstream out;
  writePi(out, results[0], "json", "gloo");
  auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["ranks"], 3);
  EXPECT_EQ(j["intervals"], 1000000);
}

}  // namespace
}  // namespace distrun::comm_bench
