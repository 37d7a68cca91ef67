// Every user mistake on distrun's command line, or in the environment it
// reads, is one line on stderr, its documented exit code (64 for the command
// line unless a row says otherwise), and nothing started: no exec, no node
// agent, no benchmark rank. One row per mistake: the command line, the
// environment, and the message (exact, or a stable prefix where the parser
// words the rest).
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/comm_bench/bench_cli.h"
#include "distrun/common/error.h"
#include "distrun/launch/run_options.h"

namespace distrun::cli {
namespace {

struct Mistake {
  std::vector<std::string> args;
  std::string message;  // after "distrun: error: " (or "distrun bench: error: ")
  bool prefixOnly = false;
  std::vector<std::pair<std::string, std::string>> env = {};  // the user's environment
  ExitCode code = ExitCode::kUsage;
};

std::ostream& operator<<(std::ostream& os, const Mistake& m) {
  for (const std::string& a : m.args) os << a << " ";
  return os;
}

// `distrun ARGS`, with exec and the node agent recording that they ran.
struct Recorder {
  ExitCode operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .hostFacts =
                       [] {
                         return HostFacts{"node1", 4};
                       },
                   .builtinSiteDir = std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                   .exec = [this](const auto&, const auto&) { started = "exec"; },
                   .toolDir = "/opt/distrun/bin",
                   .runAgent =
                       [this](launch::RunOptions&) {
                         started = "agent";
                         return 0;
                       }};
    return static_cast<ExitCode>(runCli(args, ctx));
  }

  MapEnvironment env;
  std::ostringstream out, err;
  std::string started;
};

void expectOneLine(const std::string& err, const std::string& prefix, const Mistake& m) {
  ASSERT_FALSE(err.empty());
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "more than one line: " << err;
  const std::string expected = prefix + m.message;
  if (m.prefixOnly) {
    EXPECT_THAT(err, ::testing::StartsWith(expected));
  } else {
    EXPECT_EQ(err, expected + "\n");
  }
}

class DistrunMistakeTest : public ::testing::TestWithParam<Mistake> {};

TEST_P(DistrunMistakeTest, IsOneLineWithItsExitCodeAndNothingStarts) {
  Recorder run;
  for (const auto& [name, value] : GetParam().env) run.env.set(name, value);
  EXPECT_EQ(run(GetParam().args), GetParam().code) << run.err.str();
  expectOneLine(run.err.str(), "distrun: error: ", GetParam());
  EXPECT_EQ(run.started, "") << "started for a mistake";
  EXPECT_EQ(run.out.str(), "");
}

const Mistake kCommandMistakes[] = {
    {{}, "expected a command: hostnames, env, exec, run, bench, train (see 'distrun --help')"},
    {{"rnu"}, "unknown command 'rnu' (did you mean 'run'?)"},
    {{"exce", "--", "true"}, "unknown command 'exce' (did you mean 'exec'?)"},
    {{"frobnicate"},
     "unknown command 'frobnicate': expected one of hostnames, env, exec, run, bench, train"},
    {{"--verison"}, "unknown flag --verison: did you mean --version?"},
    {{"--nproc-per-node", "2", "run", "ddp.py"},
     "unknown flag --nproc-per-node before the command: flags follow it (distrun COMMAND "
     "[FLAGS...])"},
};
INSTANTIATE_TEST_SUITE_P(Command, DistrunMistakeTest, ::testing::ValuesIn(kCommandMistakes));

// torchrun, the link, is `distrun run` (apps/distrun/main.cc).
const Mistake kRunMistakes[] = {
    {{"run", "--nproc-per-node", "2", "--max-restart", "2", "ddp.py"},
     "run: unknown flag --max-restart: did you mean --max-restarts?"},
    {{"run", "--max-restart=2", "ddp.py"},
     "run: unknown flag --max-restart: did you mean --max-restarts?"},
    {{"run", "--logdir", "logs", "ddp.py"}, "run: unknown flag --logdir: did you mean --log-dir?"},
    {{"run", "--nproc-per-nodes", "2", "ddp.py"},
     "run: unknown flag --nproc-per-nodes: did you mean --nproc-per-node?"},
    {{"run", "-nproc-per-node", "2", "ddp.py"},
     "run: unknown flag -nproc-per-node: did you mean --nproc-per-node?"},
    {{"run", "-x", "ddp.py"}, "run: unknown flag -x (see 'distrun run --help')"},
    {{"run", "--version"}, "run: unknown flag --version (see 'distrun run --help')"},
    {{"run", "--frobnicate", "--", "ddp.py"},
     "run: unknown flag --frobnicate (see 'distrun run --help')"},
    {{"run", "--nproc-per-node", "2", "--frobnicate", "--standalone", "ddp.py"},
     "run: unknown flag --frobnicate (see 'distrun run --help')"},
    {{"run", "--nproc-per-node"}, "--nproc-per-node", true},
    {{"run", "--max-restarts", "two", "ddp.py"},
     "Could not convert: --max-restarts = two (see 'distrun run --help')"},
    {{"run", "--frobnicate", "2", "--", "ddp.py"},
     "run: unknown flag --frobnicate (see 'distrun run --help')"},
};
INSTANTIATE_TEST_SUITE_P(Run, DistrunMistakeTest, ::testing::ValuesIn(kRunMistakes));

const Mistake kExecMistakes[] = {
    {{"exec", "--verbos", "--", "true"}, "exec: unknown flag --verbos: did you mean --verbose?"},
    {{"exec", "--verbos", "true"}, "exec: unknown flag --verbos: did you mean --verbose?"},
    {{"exec", "--sites", "none", "true"}, "exec: unknown flag --sites: did you mean --site?"},
    {{"exec", "-x", "--", "true"}, "exec: unknown flag -x (see 'distrun exec --help')"},
    {{"exec", "--site"}, "--site", true},
    {{"exec", "-v", "--frobnicate", "--", "true"},
     "exec: unknown flag --frobnicate (see 'distrun exec --help')"},
};
INSTANTIATE_TEST_SUITE_P(Exec, DistrunMistakeTest, ::testing::ValuesIn(kExecMistakes));

const Mistake kEnvMistakes[] = {
    {{"env", "--frobnicate"}, "env: unknown flag --frobnicate (see 'distrun env --help')"},
    {{"env", "--formt", "json"}, "env: unknown flag --formt: did you mean --format?"},
    {{"env", "--format"}, "--format", true},
    {{"env", "--format", "yaml"}, "--format", true},
    {{"env", "json"}, "env: unexpected argument 'json' (env takes flags only)"},
};
INSTANTIATE_TEST_SUITE_P(Env, DistrunMistakeTest, ::testing::ValuesIn(kEnvMistakes));

const Mistake kHostnamesMistakes[] = {
    {{"hostnames", "--compres", "n1", "n2"},
     "hostnames: unknown flag --compres: did you mean --compress?"},
    {{"hostnames", "n1", "-x"}, "hostnames: unknown flag -x (see 'distrun hostnames --help')"},
    {{"hostnames"},
     "hostnames: no HOSTLIST given and neither SLURM_JOB_NODELIST nor SLURM_NODELIST is set"},
};
INSTANTIATE_TEST_SUITE_P(Hostnames, DistrunMistakeTest, ::testing::ValuesIn(kHostnamesMistakes));

const Mistake kTrainMistakes[] = {
    {{"train", "mnist", "--frobnicate"},
     "train: unknown flag --frobnicate: neither a launcher flag ('distrun train --help') nor a "
     "training flag ('distrun train mnist --help')"},
    {{"train", "--epochs", "1"},
     "train: expected a workload (mnist or linear) for the training flag --epochs"},
    {{"--epochs", "1", "train", "mnist"}, "unknown flag --epochs before the command", true},
    {{"train", "--nproc-per-nod", "2", "mnist"},
     "train: unknown flag --nproc-per-nod: did you mean --nproc-per-node (a launcher flag)?"},
    {{"train", "mnist", "--epoch", "2"},
     "train: unknown flag --epoch: did you mean --epochs (a training flag)?"},
    {{"train", "mnist", "--epochs"}, "train: training flag --epochs needs a value"},
    {{"train", "--nproc-per-node", "2"},
     "train: expected a workload (mnist or linear) after the launcher flags"},
    {{"train", "mnist", "linear"},
     "train: unexpected argument 'linear' after the workload mnist",
     true},
};
INSTANTIATE_TEST_SUITE_P(Train, DistrunMistakeTest, ::testing::ValuesIn(kTrainMistakes));

// Item 9: torchrun's rendezvous flags: unknown --rdzv-conf keys and
// contradictions are refused; distrun run as one of several mpirun tasks.
const Mistake kRdzvMistakes[] = {
    {{"run", "--rdzv-conf", "join_timout=60", "ddp.py"},
     "--rdzv-conf: unknown key 'join_timout': did you mean join_timeout? (known: join_timeout, "
     "last_call_timeout, close_timeout, heartbeat_timeout, keep_alive_interval, "
     "keep_alive_max_attempt, read_timeout, is_host, use_libuv, timeout)"},
    {{"run", "--rdzv_conf=frobnicate=1", "ddp.py"},
     "--rdzv-conf: unknown key 'frobnicate' (known: join_timeout, last_call_timeout, "
     "close_timeout, heartbeat_timeout, keep_alive_interval, keep_alive_max_attempt, "
     "read_timeout, is_host, use_libuv, timeout)"},
    {{"run", "--rdzv-conf", "join_timeout", "ddp.py"},
     "--rdzv-conf 'join_timeout': expected key=value pairs"},
    {{"run", "--standalone", "--rdzv-endpoint", "localhost:29411", "ddp.py"},
     "--standalone contradicts --rdzv-endpoint localhost:29411: --standalone hosts a private "
     "store on a free port of 127.0.0.1 for one node; drop one of them"},
    {{"run", "--standalone", "--master-addr", "head", "ddp.py"},
     "--standalone contradicts --master-addr head: --standalone hosts a private store on a free "
     "port of 127.0.0.1 for one node; drop one of them"},
    {{"train", "mnist", "--standalone", "--rdzv_endpoint=head:29400"},
     "--standalone contradicts --rdzv-endpoint head:29400: --standalone hosts a private store on "
     "a free port of 127.0.0.1 for one node; drop one of them"},
    {{"run", "--nproc-per-node", "2", "ddp.py"},
     "distrun run is one of 2 tasks started by mpirun (OMPI_COMM_WORLD_SIZE=2): each would start "
     "its own separate job of --nproc-per-node 2 workers; for one rank per task use 'mpirun -np "
     "N distrun exec -- PROGRAM', for workers per node start one distrun run per node (srun "
     "--ntasks-per-node=1, or --nnodes, --node-rank and --rdzv-endpoint)",
     false,
     {{"OMPI_COMM_WORLD_RANK", "0"},
      {"OMPI_COMM_WORLD_SIZE", "2"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}},
};
INSTANTIATE_TEST_SUITE_P(Rdzv, DistrunMistakeTest, ::testing::ValuesIn(kRdzvMistakes));

// Item 10: `distrun run` needs a PROGRAM.
const Mistake kNoProgramMistakes[] = {
    {{"run"}, "run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]"},
    {{"run", "--nproc-per-node", "2"},
     "run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]"},
    {{"run", "--nproc-per-node", "2", "--"},
     "run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]"},
};
INSTANTIATE_TEST_SUITE_P(NoProgram, DistrunMistakeTest, ::testing::ValuesIn(kNoProgramMistakes));

// distrun-bench (what `distrun bench` execs): any rank it would start, or
// join, first asks for the host's facts.
class BenchMistakeTest : public ::testing::TestWithParam<Mistake> {};

TEST_P(BenchMistakeTest, IsOneLineWithItsExitCodeAndNothingStarts) {
  MapEnvironment env;
  for (const auto& [name, value] : GetParam().env) env.set(name, value);
  std::ostringstream out, err;
  bool started = false;
  comm_bench::BenchContext ctx{.env = env,
                               .out = out,
                               .err = err,
                               .hostFacts =
                                   [&started] {
                                     started = true;
                                     return HostFacts{"node1", 4};
                                   },
                               .executable = "/opt/distrun/bin/distrun-bench",
                               .builtinSiteDir = ""};
  EXPECT_EQ(comm_bench::runBenchCli(GetParam().args, ctx), toInt(GetParam().code)) << err.str();
  expectOneLine(err.str(), "distrun bench: error: ", GetParam());
  EXPECT_FALSE(started);
}

constexpr const char* kProcesses =
    "ranks are processes: use --nproc-per-node (distrun run) or srun/mpirun tasks";

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
};
INSTANTIATE_TEST_SUITE_P(Bench, BenchMistakeTest, ::testing::ValuesIn(kBenchMistakes));

}  // namespace
}  // namespace distrun::cli
