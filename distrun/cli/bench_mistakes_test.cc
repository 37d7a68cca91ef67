// distrun-bench's mistakes (what `distrun bench` execs, a program of its
// own): the same table as mistakes_test.cc's, and its --dry-run, which
// `distrun submit` checks a bench job's flags with.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "distrun/cli/mistakes_table.h"
#include "distrun/comm_bench/bench_cli.h"
#include "distrun/common/environment.h"
#include "distrun/common/error.h"
#include "distrun/config.h"

namespace distrun::cli {
namespace {

// distrun-bench in `env`, writing to out and err; `started` is set once it
// asks for the host's facts, as any rank it would start, or join, does first.
struct Bench {
  int operator()(const std::vector<std::string>& args) {
    comm_bench::BenchContext ctx{.env = env,
                                 .out = out,
                                 .err = err,
                                 .hostFacts =
                                     [this] {
                                       started = true;
                                       return HostFacts{"node1", 4};
                                     },
                                 .executable = "/opt/distrun/bin/distrun-bench",
                                 .builtinSiteDir = ""};
    return comm_bench::runBenchCli(args, ctx);
  }
  MapEnvironment env;
  std::ostringstream out, err;
  bool started = false;
};

class BenchMistakeTest : public ::testing::TestWithParam<Mistake> {};

TEST_P(BenchMistakeTest, IsOneLineWithItsExitCodeAndNothingStarts) {
  Bench bench;
  for (const auto& [name, value] : GetParam().env) bench.env.set(name, value);
  EXPECT_EQ(bench(GetParam().args), toInt(GetParam().code)) << bench.err.str();
  expectOneLine(bench.err.str(), "distrun: error: ", GetParam());
  EXPECT_FALSE(bench.started);
}

constexpr const char* kProcesses =
    "ranks are processes: use --nproc-per-node (distrun run) or srun/mpirun tasks";

// --dry-run checks the flags as a run would, then measures nothing.
TEST(BenchDryRunTest, SaysWhatWouldBeMeasuredAndStartsNothing) {
  Bench bench;
  EXPECT_EQ(bench({"all_reduce", "-b", "4K", "-e", "64M", "--dry-run"}), 0) << bench.err.str();
  EXPECT_EQ(bench.out.str(),
            "distrun bench: all_reduce, 15 sizes from 4096 to 67108864 bytes, 20 iterations after "
            "5 warm-up, backend auto: nothing measured (--dry-run)\n");
  EXPECT_FALSE(bench.started);
  EXPECT_EQ(bench({"all_reduce", "-b", "64M", "-e", "4K", "--dry-run"}), 64);
  EXPECT_EQ(bench.err.str(), "distrun: error: -b 67108864 is above -e 4096\n");
}

const Mistake kBenchMistakes[] = {
    {{"-g", "1"},
     std::string("-g (nccl-tests' GPUs per thread) is not a distrun bench flag: ") + kProcesses},
    {{"all_reduce", "-g", "2"},
     std::string("-g (nccl-tests' GPUs per thread) is not a distrun bench flag: ") + kProcesses},
    {{"all_reduce", "-t", "1"},
     std::string("-t (nccl-tests' threads per process) is not a distrun bench flag: ") +
         kProcesses},
    {{"all_reduce", "--nthreads=4"},
     std::string("-t (nccl-tests' threads per process) is not a distrun bench flag: ") +
         kProcesses},
    {{"all_reduce", "-b"}, "--minbytes: 1 required TEXT missing", true},
    {{"all_reduce", "--maxbyte", "1M"}, "unknown flag --maxbyte: did you mean --maxbytes?"},
    {{"--maxbyte", "1M", "all_reduce"}, "unknown flag --maxbyte: did you mean --maxbytes?"},
    {{"all_reduce", "-x"}, "unknown flag -x (see 'distrun bench --help')"},
    {{"all_reduce", "broadcast"},
     "unexpected argument 'broadcast': distrun bench takes one COLLECTIVE"},
    {{"all_reduc"},
     "COLLECTIVE 'all_reduc' is not one of: all_reduce, broadcast, all_gather, reduce_scatter, "
     "alltoall, sendrecv, pi"},
    {{}, "COLLECTIVE is required (see 'distrun bench --help')"},
    {{"all_reduce", "--backend", "nccl"},
     "--backend nccl moves GPU memory: add --device cuda (or use --backend gloo on the CPU)"},
    {{"all_reduce", "--backend", "hccl"}, "--backend 'hccl': expected auto, gloo", true},
    {{"all_reduce", "--device", "tpu"}, "--device 'tpu' is not cpu or cuda"},
    {{"pi", "--device", "cuda"},
     DISTRUN_WITH_NCCL ? "pi runs on the CPU: drop --device cuda"
                       : "--device cuda: this distrun was built without NCCL",
     true},
    // Item 8: a hand-described world that cannot be (RANK and WORLD_SIZE
    // make distrun-bench a rank of it).
    {{"pi"},
     "RANK=3 is not below WORLD_SIZE=2; if left from an earlier shell or job, clear them: eval "
     "\"$(distrun env --unset)\"",
     false,
     {{"RANK", "3"}, {"WORLD_SIZE", "2"}},
     ExitCode::kConfig},
};
INSTANTIATE_TEST_SUITE_P(Bench, BenchMistakeTest, ::testing::ValuesIn(kBenchMistakes));

}  // namespace
}  // namespace distrun::cli
