// Every user mistake on distrun's command line, or in the environment it
// reads, is one line on stderr, its documented exit code (64 for the command
// line unless a row says otherwise), and nothing started: no exec, no node
// agent, no benchmark rank. One row per mistake: the command line, the
// environment, and the message (exact, or a stable prefix where the parser
// words the rest).
#include <algorithm>
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
  std::string message;  // after "distrun: error: "
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
                       },
                   .runTool =
                       [this](const std::vector<std::string>& argv, const std::string&) {
                         started = argv.front();
                         return ToolResult{0, "1\n", ""};
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
    {{},
     "expected a command: hostnames, env, exec, run, bench, train, submit (see 'distrun --help')"},
    {{"rnu"}, "unknown command 'rnu' (did you mean 'run'?)"},
    {{"exce", "--", "true"}, "unknown command 'exce' (did you mean 'exec'?)"},
    {{"frobnicate"},
     "unknown command 'frobnicate': expected one of hostnames, env, exec, run, bench, train, "
     "submit"},
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

// --cpu-bind and --gpu-bind (docs/launcher.md, "Binding"): refused before
// the agent starts, naming the flag. The node is described by an hwloc XML
// export (DISTRUN_NODE_TOPOLOGY) where the refusal depends on its GPUs.
const std::string kNoGpuNode =
    std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_no_gpu.xml";
const Mistake kBindMistakes[] = {
    {{"run", "--cpu-bind", "sockets", "ddp.py"},
     "--cpu-bind sockets: expected none, cores, numa, site or mask:LIST (hex masks, one per "
     "local rank: mask:0x1,0x2)"},
    {{"run", "--nproc-per-node", "2", "--cpu-bind", "mask:0x1,0xq", "ddp.py"},
     "--cpu-bind mask:0x1,0xq: '0xq' is not a hexadecimal CPU mask naming a CPU (0x1 is CPU 0, "
     "0x6 CPUs 1-2)"},
    {{"run", "--nproc-per-node", "2", "--cpu-bind", "mask:0x1", "ddp.py"},
     "--cpu-bind mask:...: 1 mask for --nproc-per-node 2: give one mask per local rank"},
    {{"run", "--cpu-bind", "mask:0x1000000000000000000000000000000000000000", "ddp.py"},
     "--cpu-bind mask:...: the mask 0x1000000000000000000000000000000000000000 of local rank 0 "
     "names CPU 156 this agent may not use",
     true},
    {{"train", "--cpu-bind", "site", "--site", "generic", "linear"},
     "--cpu-bind site: the site profile generic has no `node` lines describing its nodes: add "
     "them (docs/sites.md) or use --cpu-bind cores"},
    {{"run", "--cpu-bind", "site", "--site", "none", "ddp.py"},
     "--cpu-bind site: no site profile applies here: choose one with --site NAME (its `node` "
     "lines describe the node)"},
    {{"run", "--gpu-bind", "nearest", "ddp.py"},
     "--gpu-bind nearest: expected closest, none or map:LIST (a GPU index per local rank: "
     "map:0,1)"},
    {{"run", "--nproc-per-node", "2", "--gpu-bind", "map:0", "ddp.py"},
     "--gpu-bind map:...: 1 GPU index for --nproc-per-node 2: give one per local rank"},
    {{"run", "--gpu-bind", "map:0", "ddp.py"},
     "--gpu-bind map:0: this node has no GPU (from hwloc XML " + kNoGpuNode +
         "): leave --gpu-bind out",
     false,
     {{"DISTRUN_NODE_TOPOLOGY", kNoGpuNode}}},
    {{"exec", "--gpu-bind", "map:x", "--", "true"},
     "--gpu-bind map:x: 'x' is not a GPU index (0, 1, ...)"},
    {{"exec", "--gpu-bind", "map:0,1", "--", "true"},
     "--gpu-bind map:...: 2 GPU indexes for --nproc-per-node 1: give one per local rank"},
    {{"exec", "--gpu-bind", "map:0", "--", "true"},
     "--gpu-bind map:...: this node has no GPU (from hwloc XML " + kNoGpuNode +
         "): leave --gpu-bind out",
     false,
     {{"DISTRUN_NODE_TOPOLOGY", kNoGpuNode}}},
};
INSTANTIATE_TEST_SUITE_P(Bind, DistrunMistakeTest, ::testing::ValuesIn(kBindMistakes));

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

// Item 8: environment errors name the variable read, and those about the
// variables that place a task say how to clear stale ones.
constexpr const char* kClear =
    "; if left from an earlier shell or job, clear them: eval \"$(distrun env --unset)\"";
constexpr ExitCode kConfig = ExitCode::kConfig;

std::string clear(const std::string& message) { return message + kClear; }

// A task of a Slurm step whose step variables are all set; `more` replace some.
std::vector<std::pair<std::string, std::string>> slurmStep(
    std::vector<std::pair<std::string, std::string>> more = {}) {
  std::vector<std::pair<std::string, std::string>> vars = {{"SLURM_JOB_ID", "9"},
                                                           {"SLURM_STEP_ID", "0"},
                                                           {"SLURM_PROCID", "0"},
                                                           {"SLURM_NODEID", "0"},
                                                           {"SLURM_LOCALID", "0"},
                                                           {"SLURM_STEP_NUM_TASKS", "2"},
                                                           {"SLURM_STEP_NUM_NODES", "2"},
                                                           {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"},
                                                           {"SLURM_STEP_NODELIST", "vm[1-2]"}};
  for (auto& [name, value] : more) {
    auto at =
        std::find_if(vars.begin(), vars.end(), [&](const auto& v) { return v.first == name; });
    if (at == vars.end()) {
      vars.emplace_back(name, value);
    } else if (value == "<unset>") {
      vars.erase(at);
    } else {
      at->second = value;
    }
  }
  return vars;
}

// The job-level variables a step task falls back to (srun --export=NONE).
std::vector<std::pair<std::string, std::string>> slurmJobOnly(std::string procid,
                                                              std::string nodelist) {
  return {{"SLURM_JOB_ID", "9"}, {"SLURM_STEPID", "0"},         {"SLURM_PROCID", procid},
          {"SLURM_NODEID", "0"}, {"SLURM_LOCALID", "0"},        {"SLURM_NTASKS", "1"},
          {"SLURM_NNODES", "1"}, {"SLURM_TASKS_PER_NODE", "1"}, {"SLURM_JOB_NODELIST", nodelist}};
}

const Mistake kEnvironmentMistakes[] = {
    // torchrun's variables, set by hand or left from an earlier shell
    {{"env"}, clear("RANK=3 is set but WORLD_SIZE is not"), false, {{"RANK", "3"}}, kConfig},
    {{"exec", "--", "true"},
     clear("RANK=3 is set but WORLD_SIZE is not"),
     false,
     {{"RANK", "3"}},
     kConfig},
    {{"env"}, clear("WORLD_SIZE=2 is set but RANK is not"), false, {{"WORLD_SIZE", "2"}}, kConfig},
    {{"env"},
     clear("RANK=2 contradicts WORLD_SIZE=2: expected RANK < WORLD_SIZE"),
     false,
     {{"RANK", "2"}, {"WORLD_SIZE", "2"}},
     kConfig},
    {{"env"},
     clear("RANK='one' is not a whole number (unexpected 'o')"),
     false,
     {{"RANK", "one"}, {"WORLD_SIZE", "2"}},
     kConfig},
    {{"env"},
     clear("LOCAL_RANK=2 contradicts LOCAL_WORLD_SIZE=2: expected LOCAL_RANK < LOCAL_WORLD_SIZE"),
     false,
     {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}},
     kConfig},
    {{"env"},
     clear("GROUP_RANK=1 contradicts GROUP_WORLD_SIZE=1: expected GROUP_RANK < GROUP_WORLD_SIZE"),
     false,
     {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"GROUP_RANK", "1"}},
     kConfig},
    {{"exec", "--", "true"},
     clear("MASTER_PORT is not set and there is no job id to derive it from: set MASTER_PORT "
           "for the 2-process world WORLD_SIZE=2 describes"),
     false,
     {{"RANK", "0"}, {"WORLD_SIZE", "2"}},
     kConfig},
    {{"env"},
     clear("MASTER_PORT='70000' is too large (at most 65535)"),
     false,
     {{"MASTER_PORT", "70000"}},
     kConfig},
    {{"env"},
     clear("MASTER_PORT='x' is not a whole number (unexpected 'x')"),
     false,
     {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "x"}},
     kConfig},
    // Slurm: the variable read, step or job level
    {{"env"},
     clear("SLURM_PROCID=1 contradicts SLURM_NTASKS=1: expected SLURM_PROCID < SLURM_NTASKS"),
     false,
     slurmJobOnly("1", "vm1"),
     kConfig},
    {{"env"},
     clear("SLURM_PROCID=2 contradicts SLURM_STEP_NUM_TASKS=2: expected SLURM_PROCID < "
           "SLURM_STEP_NUM_TASKS"),
     false,
     slurmStep({{"SLURM_PROCID", "2"}}),
     kConfig},
    {{"exec", "--", "true"},
     clear("SLURM_JOB_NODELIST: invalid hostlist 'vm[1-2': expected ']' (the '[' at column 3 is "
           "not closed) at column 7, found the end of the list"),
     false,
     slurmJobOnly("0", "vm[1-2"),
     kConfig},
    {{"env"},
     clear("SLURM_STEP_NODELIST: invalid hostlist 'vm[1-2': expected ']' (the '[' at column 3 is "
           "not closed) at column 7, found the end of the list"),
     false,
     slurmStep({{"SLURM_STEP_NODELIST", "vm[1-2"}}),
     kConfig},
    {{"env"},
     clear("SLURM_STEP_NODELIST names 3 hosts but SLURM_STEP_NUM_NODES=2"),
     false,
     slurmStep({{"SLURM_STEP_NODELIST", "vm[1-3]"}}),
     kConfig},
    {{"env"},
     clear("SLURM_NODEID=2 contradicts SLURM_STEP_NUM_NODES=2: expected SLURM_NODEID < "
           "SLURM_STEP_NUM_NODES"),
     false,
     slurmStep({{"SLURM_NODEID", "2"}}),
     kConfig},
    {{"env"},
     clear("SLURM_STEP_TASKS_PER_NODE adds up to 3 tasks but SLURM_STEP_NUM_TASKS=2"),
     false,
     slurmStep({{"SLURM_STEP_TASKS_PER_NODE", "2,1"}}),
     kConfig},
    {{"env"},
     clear("SLURM_STEP_TASKS_PER_NODE='2(x' is malformed at '2(x': expected counts like "
           "'2(x3),1'"),
     false,
     slurmStep({{"SLURM_STEP_TASKS_PER_NODE", "2(x"}}),
     kConfig},
    {{"env"},
     clear("SLURMD_NODENAME=vm2 contradicts SLURM_NODEID=0: node 0 of SLURM_STEP_NODELIST is vm1"),
     false,
     slurmStep({{"SLURMD_NODENAME", "vm2"}}),
     kConfig},
    {{"env"},
     clear("SLURM_PROCID=0 is set but SLURM_LOCALID is not"),
     false,
     slurmStep({{"SLURM_LOCALID", "<unset>"}}),
     kConfig},
    {{"env"},
     clear("SLURM_PROCID and SLURM_STEP_ID say this is a task of a Slurm step but none of "
           "SLURM_STEP_NUM_NODES, SLURM_NNODES, SLURM_JOB_NUM_NODES is set"),
     false,
     slurmStep({{"SLURM_STEP_NUM_NODES", "<unset>"}}),
     kConfig},
    // Open MPI, MPICH/Hydra
    {{"exec", "--", "true"},
     clear("OMPI_COMM_WORLD_RANK=2 contradicts OMPI_COMM_WORLD_SIZE=2: expected "
           "OMPI_COMM_WORLD_RANK < OMPI_COMM_WORLD_SIZE"),
     false,
     {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "2"}},
     kConfig},
    {{"env"},
     clear("OMPI_COMM_WORLD_RANK=0 is set but OMPI_COMM_WORLD_SIZE is not"),
     false,
     {{"OMPI_COMM_WORLD_RANK", "0"}},
     kConfig},
    {{"env"},
     clear("openmpi job spans 2 nodes (OMPI_MCA_orte_num_nodes=2) and no allocation "
           "(SLURM_JOB_NODELIST, PBS_NODEFILE) says which host runs rank 0: set MASTER_ADDR "
           "(mpirun -x MASTER_ADDR=HOST)"),
     false,
     {{"OMPI_COMM_WORLD_RANK", "0"},
      {"OMPI_COMM_WORLD_SIZE", "2"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
      {"OMPI_MCA_orte_num_nodes", "2"}},
     kConfig},
    {{"env"},
     clear("SLURM_JOB_NODELIST: invalid hostlist 'n[1-': expected a number at column 5, found "
           "the end of the list"),
     true,
     {{"OMPI_COMM_WORLD_RANK", "0"},
      {"OMPI_COMM_WORLD_SIZE", "2"},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
      {"SLURM_JOB_ID", "9"},
      {"SLURM_JOB_NODELIST", "n[1-"}},
     kConfig},
    {{"env"},
     clear("PMI_RANK=1 contradicts PMI_SIZE=1: expected PMI_RANK < PMI_SIZE"),
     false,
     {{"PMI_RANK", "1"}, {"PMI_SIZE", "1"}},
     kConfig},
    {{"env"},
     clear("MPI_LOCALRANKID=1 contradicts MPI_LOCALNRANKS=1: expected MPI_LOCALRANKID < "
           "MPI_LOCALNRANKS"),
     false,
     {{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "1"}},
     kConfig},
    // PBS
    {{"env"},
     "PBS_NODEFILE: cannot open '/nonexistent/nodes'",
     true,
     {{"PBS_JOBID", "1.srv"}, {"PBS_VNODENUM", "0"}, {"PBS_NODEFILE", "/nonexistent/nodes"}},
     ExitCode::kIo},
    // hostnames without a list expands the job's
    {{"hostnames"},
     "SLURM_JOB_NODELIST: invalid hostlist 'vm[1-2': expected ']' (the '[' at column 3 is not "
     "closed) at column 7, found the end of the list",
     false,
     {{"SLURM_JOB_NODELIST", "vm[1-2"}},
     kConfig},
    {{"hostnames"},
     "SLURM_NODELIST: invalid hostlist 'vm]': expected a host name or '[' (stray ']') at column "
     "3, found ']'",
     false,
     {{"SLURM_NODELIST", "vm]"}},
     kConfig},
    // --unset prints shell commands only
    {{"env", "--unset", "--format", "json"},
     "--format excludes --unset (see 'distrun env --help')"},
    {{"env", "--unset", "--site", "none"}, "--site excludes --unset (see 'distrun env --help')"},
};
INSTANTIATE_TEST_SUITE_P(Environment, DistrunMistakeTest,
                         ::testing::ValuesIn(kEnvironmentMistakes));

// Item 4: the files rank 0 will write are checked on the launching host
// before anything starts (exit 74, as the failed write itself would be);
// rank 0 checks again before the first step (trainer_test.cc,
// train_process_test.cc).
const Mistake kTrainOutputMistakes[] = {
    {{"train", "mnist", "--snapshot", "/nonexistent-distrun/s.snap"},
     "--snapshot /nonexistent-distrun/s.snap: the folder /nonexistent-distrun does not exist: "
     "create it, or choose another path",
     false,
     {},
     ExitCode::kIo},
    {{"train", "--nproc-per-node", "2", "linear", "--metrics", "/dev/null/m.json"},
     "--metrics /dev/null/m.json: /dev/null is not a folder: choose a path in a folder",
     false,
     {},
     ExitCode::kIo},
    {{"train", "linear", "--snapshot=/sys/s.snap"},
     "--snapshot /sys/s.snap: cannot create a file in /sys: ",
     true,
     {},
     ExitCode::kIo},
    {{"train", "linear", "--nproc-per-node", "2", "--snapshot", "/"},
     "--snapshot /: it is a folder: name a file in it (//FILE)",
     false,
     {},
     ExitCode::kIo},
};
INSTANTIATE_TEST_SUITE_P(TrainOutput, DistrunMistakeTest,
                         ::testing::ValuesIn(kTrainOutputMistakes));

// Item 10: distrun-train's values are checked by `distrun train` before
// anything starts, in the words distrun-train would use.
const Mistake kTrainValueMistakes[] = {
    {{"train", "linear", "--epochs", "0"}, "--epochs 0: expected at least 1"},
    {{"train", "mnist", "--progress", "fancy", "--nproc-per-node", "2"},
     "--progress 'fancy': expected auto, bar, epochs or none"},
    {{"train", "mnist", "--epochs", "two"},
     "train: Could not convert: --epochs = two (see 'distrun train mnist --help')"},
};
INSTANTIATE_TEST_SUITE_P(TrainValues, DistrunMistakeTest, ::testing::ValuesIn(kTrainValueMistakes));

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

// distrun submit: refused before sbatch runs.
const Mistake kSubmitMistakes[] = {
    {{"submit", "--nodes", "2", "train", "mnist"},
     "submit: put the distrun command after --: distrun submit [OPTIONS] -- train mnist"},
    {{"submit", "--nodes", "2"},
     "submit: expected a distrun command after -- (run, train, bench or exec)"},
    {{"submit", "--", "trian", "mnist"},
     "submit: 'trian' is not a distrun command a batch job runs: expected run, train, bench or "
     "exec (did you mean train?)"},
    {{"submit", "--", "hostnames"},
     "submit: 'hostnames' is not a distrun command a batch job runs: expected run, train, bench "
     "or exec"},
    {{"submit", "--time", "1h", "--", "train", "mnist"},
     "--time '1h': expected Slurm's MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
     "DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (e.g. 90, 1:30:00, 2-00)"},
    {{"submit", "--time", "1", "--", "train", "mnist"},
     "submit: --signal-grace 120 s leaves no time to train within --time 1: shorten the grace "
     "or lengthen the limit"},
    {{"submit", "--nproc-per-node", "4", "--", "train", "--nproc-per-node", "2", "mnist"},
     "submit: --nproc-per-node 4 contradicts the command's --nproc-per-node 2: give it once"},
    {{"submit", "--site", "lumi", "--gpus-per-node", "9", "--", "exec", "--", "prog"},
     "--gpus-per-node 9: the node has 8 GPUs (from the site profile",
     true},
    {{"submit", "--site", "lumi", "--nproc-per-node", "3", "--", "exec", "--", "prog"},
     "--nproc-per-node 3 cannot share 8 GPUs evenly: use a divisor or a multiple of 8"},
    {{"submit", "--site", "lumi", "--cpus-per-task", "8", "--", "exec", "--", "prog"},
     "--cpus-per-task 8: local rank 0 has 7 usable cores (49-55) of the node's 56",
     true},
    {{"submit", "--site", "lumx", "--", "train", "mnist"},
     "site profile 'lumx' not found in",
     true,
     {},
     ExitCode::kConfig},
    {{"submit", "--nodes", "0", "--", "train", "mnist"}, "--nodes: Value 0 not in range", true},
    {{"submit", "--format", "yaml", "--", "train", "mnist"}, "--format: yaml not in", true},
    {{"submit", "--dryrun", "--", "train", "mnist"},
     "submit: unknown flag --dryrun: did you mean --dry-run?"},
};
INSTANTIATE_TEST_SUITE_P(Submit, DistrunMistakeTest, ::testing::ValuesIn(kSubmitMistakes));

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
  expectOneLine(err.str(), "distrun: error: ", GetParam());
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
