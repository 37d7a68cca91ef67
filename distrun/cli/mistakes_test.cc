// Every user mistake on distrun's command line (mistakes_table.h). One row
// per mistake: the command line, the environment, and the message (exact, or
// a stable prefix where the parser words the rest). The environment's own
// mistakes are in environment_mistakes_test.cc, distrun-bench's in
// bench_mistakes_test.cc, distrun submit's in submit_mistakes_test.cc.
#include <algorithm>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/cli/cli.h"
#include "distrun/cli/mistakes_table.h"
#include "distrun/cli/source_paths_testing.h"
#include "distrun/common/error.h"
#include "distrun/launch/run_options.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {
namespace {

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
     "expected a command: hostnames, env, exec, run, bench, doctor, train, submit, wrap, enter, "
     "trace, plot (see 'distrun --help')"},
    {{"rnu"}, "unknown command 'rnu' (did you mean 'run'?)"},
    {{"exce", "--", "true"}, "unknown command 'exce' (did you mean 'exec'?)"},
    {{"frobnicate"},
     "unknown command 'frobnicate': expected one of hostnames, env, exec, run, bench, doctor, "
     "train, submit, wrap, enter, trace, plot"},
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
    {{"run", "--hang-timeout", "soon", "ddp.py"},
     "Could not convert: --hang-timeout = soon (see 'distrun run --help')"},
    {{"run", "--hang-timeout", "-1", "ddp.py"},
     "--hang-timeout -1: expected 0 (off) or a number of seconds of at least 1 (progress is "
     "sampled every second)"},
    {{"train", "--hang-timeout", "0.2", "linear"},
     "--hang-timeout 0.2: expected 0 (off) or a number of seconds of at least 1 (progress is "
     "sampled every second)"},
    {{"run", "--frobnicate", "2", "--", "ddp.py"},
     "run: unknown flag --frobnicate (see 'distrun run --help')"},
    {{"run", "--status", "bar", "ddp.py"}, "--status 'bar': expected auto, line, plain or none"},
    {{"train", "linear", "--status", "fancy"},
     "--status 'fancy': expected auto, line, plain or none"},
};
INSTANTIATE_TEST_SUITE_P(Run, DistrunMistakeTest, ::testing::ValuesIn(kRunMistakes));

// --cpu-bind and --gpu-bind (docs/launcher.md, "Binding"): refused before
// the agent starts, naming the flag. The node is described by an hwloc XML
// export (DISTRUN_NODE_TOPOLOGY) where the refusal depends on its GPUs.
const std::string kNoGpuNode =
    std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_no_gpu.xml";
const std::string kTwoGpuNode =
    std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_two_gpus.xml";
const Mistake kBindMistakes[] = {
    {{"exec", "--gpu-bind", "map:5", "--", "true"},
     "--gpu-bind map:...: GPU 5 for local rank 0, but the task has 2 (0-1, from hwloc XML " +
         kTwoGpuNode + ")",
     false,
     {{"DISTRUN_NODE_TOPOLOGY", kTwoGpuNode}}},
    {{"run", "--nproc-per-node", "1", "ddp.py"},
     "CUDA_VISIBLE_DEVICES=7: GPU 7 is not one of the node's 2 GPUs (0-1, from hwloc XML " +
         kTwoGpuNode + ")",
     false,
     {{"DISTRUN_NODE_TOPOLOGY", kTwoGpuNode}, {"CUDA_VISIBLE_DEVICES", "7"}},
     ExitCode::kConfig},
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
    // Prefix: "mpi" follows where the build has it.
    {{"train", "linear", "--backend", "nccl"}, "--backend 'nccl': expected auto, gloo", true},
    // The workload and MNIST's folder, found before any rank starts.
    {{"train", "mnsit"}, "workload 'mnsit': expected mnist or linear (did you mean mnist?)"},
    {{"train", "--nproc-per-node", "2", "resnet"}, "workload 'resnet': expected mnist or linear"},
    {{"train", "mnist", "--data", "/nonexistent-distrun"},
     "MNIST folder '/nonexistent-distrun' does not exist: run scripts/prepare-mnist, or give the "
     "folder of a torchvision MNIST download with --data DIR",
     false,
     {},
     ExitCode::kIo},
    {{"train", "mnist"},
     "MNIST folder '/nonexistent-distrun' does not exist: run scripts/prepare-mnist, or give the "
     "folder of a torchvision MNIST download with --data DIR",
     false,
     {{"DISTRUN_DATA", "/nonexistent-distrun"}},
     ExitCode::kIo},
};
INSTANTIATE_TEST_SUITE_P(Train, DistrunMistakeTest, ::testing::ValuesIn(kTrainMistakes));

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

// docs/observability.md, "Recording a trace": --trace's values are checked,
// and its folder made, before anything starts.
const Mistake kTraceMistakes[] = {
    {{"train", "--trace-steps", "5:2", "--trace", "/dev/null/t", "linear"},
     "--trace-steps 5:2: expected FIRST:LAST, global training steps counted from 1 with FIRST "
     "<= LAST (1:100)"},
    {{"train", "linear", "--trace", "/dev/null/t", "--trace-steps", "abc"},
     "--trace-steps abc: expected FIRST:LAST, global training steps counted from 1 with FIRST "
     "<= LAST (1:100)"},
    {{"train", "--trace-max-mb", "0", "--trace", "/dev/null/t", "linear"},
     "--trace-max-mb 0: expected a whole number of megabytes per file, at least 1"},
    {{"train", "--trace-steps", "1:2", "linear"},
     "--trace-steps needs --trace DIR, the folder of the trace"},
    {{"train", "--trace", "", "linear"}, "--trace: expected a folder, got ''"},
    {{"train", "--trace", "/dev/null/t", "linear"},
     "--trace /dev/null/t: cannot create the folder: Not a directory",
     false,
     {},
     ExitCode::kIo},
    {{"run", "--trace", "t", "ddp.py"}, "run: unknown flag --trace (see 'distrun run --help')"},
};
INSTANTIATE_TEST_SUITE_P(Trace, DistrunMistakeTest, ::testing::ValuesIn(kTraceMistakes));

// Item 9: torchrun's rendezvous flags: a --rdzv-conf that is not key=value
// pairs and contradictions are refused; distrun run as one of several mpirun tasks.
const Mistake kRdzvMistakes[] = {
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

// distrun trace merge (docs/observability.md): refused before anything is
// written; a folder of trace files, and one with a broken line.
const std::string kTraces = std::string(DISTRUN_SOURCE_DIR) + "/distrun/trace_merge/testdata";
const std::string kTraceOut = ::testing::TempDir() + "distrun-mistakes-trace.json";
const std::string kNoTraces = testing::kDocs;  // a folder without trace files
const Mistake kTraceMergeMistakes[] = {
    {{"trace"}, "trace: expected a subcommand: merge (see 'distrun trace --help')"},
    {{"trace", "mrege", "traces"}, "trace: unknown subcommand 'mrege' (did you mean 'merge'?)"},
    {{"trace", "show"}, "trace: unknown subcommand 'show': expected merge"},
    {{"trace", "--merge"}, "trace: unknown flag --merge (see 'distrun trace --help')"},
    {{"trace", "merge"},
     "trace merge: expected the trace folder DIR (distrun trace merge DIR [-o FILE]; see 'distrun "
     "trace merge --help')"},
    {{"trace", "merge", "a", "b"},
     "trace merge: one trace folder expected, got 'a' and 'b' (distrun trace merge DIR [-o "
     "FILE])"},
    {{"trace", "merge", "--outptu", "t.json", "traces"},
     "trace merge: unknown flag --outptu: did you mean --output?"},
    {{"trace", "merge", "-x", "traces"},
     "trace merge: unknown flag -x (see 'distrun trace merge --help')"},
    {{"trace", "merge", "traces", "-o"},
     "--output: 1 required TEXT missing (see 'distrun trace --help')"},
    {{"trace", "merge", "/nonexistent-distrun/traces"},
     "trace folder /nonexistent-distrun/traces: does not exist: give the folder that distrun "
     "train --trace DIR (or DISTRUN_TRACE=DIR) wrote",
     false,
     {},
     ExitCode::kNoInput},
    {{"trace", "merge", "-o", kTraceOut, kNoTraces},
     "trace folder " + kNoTraces +
         ": no trace files in it (rank<R>.jsonl, agent<N>.jsonl, torch-rank<R>.json): give the "
         "folder that distrun train --trace DIR (or DISTRUN_TRACE=DIR) wrote",
     false,
     {},
     ExitCode::kNoInput},
    {{"trace", "merge", kTraces + "/two_ranks", "-o", "/nonexistent-distrun/t.json"},
     "-o /nonexistent-distrun/t.json: the folder /nonexistent-distrun does not exist: create it, "
     "or choose another path",
     false,
     {},
     ExitCode::kIo},
    {{"trace", "merge", kTraces + "/malformed", "-o", kTraceOut},
     kTraces + "/malformed/rank0.jsonl:3: not whole JSON (column 49): expected one JSON object per "
               "line",
     false,
     {},
     ExitCode::kData},
};
INSTANTIATE_TEST_SUITE_P(TraceMerge, DistrunMistakeTest, ::testing::ValuesIn(kTraceMergeMistakes));

// distrun wrap: every mistake is found before mmdebstrap, cp or mksquashfs
// runs (nothing "wrap" started). A folder that exists: the docs.
using testing::kDocs;
using testing::kNotAnImage;
const std::string kDocsDir = kDocs + ":/opt/docs";
const std::string kExisting = std::string(DISTRUN_BINARY_DIR) + "/CMakeCache.txt";
const Mistake kWrapMistakes[] = {
    {{"wrap", "-o", "/tmp/x.sif"},
     "wrap: nothing to put in the image: give --apt PKG[,PKG...], --dir SRC:DEST or --base "
     "IMAGE (see 'distrun wrap --help')"},
    {{"wrap", "--dir", kDocsDir},
     "wrap: -o IMAGE is required: the image file to write (-o env.sif)"},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", "/nonexistent-distrun/venv:/opt/env"},
     "--dir /nonexistent-distrun/venv:/opt/env: /nonexistent-distrun/venv does not exist: give "
     "a folder on this host",
     false,
     {},
     ExitCode::kNoInput},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kDocs + ":opt/docs"},
     "--dir " + kDocs +
         ":opt/docs: DEST opt/docs must be an absolute path inside the image "
         "(/opt/env)"},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kDocs},
     "--dir " + kDocs +
         ": expected SRC:DEST, a host folder and where it goes in the image "
         "(--dir ./venv:/opt/env)"},
    {{"wrap", "-o", "/nonexistent-distrun/x.sif", "--dir", kDocsDir},
     "-o /nonexistent-distrun/x.sif: the folder /nonexistent-distrun does not exist: create it, "
     "or choose another path",
     false,
     {},
     ExitCode::kIo},
    {{"wrap", "-o", "/sys/x.sif", "--dir", kDocsDir},
     "-o /sys/x.sif: cannot create a file in /sys: ",
     true,
     {},
     ExitCode::kIo},
    {{"wrap", "-o", kExisting, "--dir", kDocsDir},
     "-o " + kExisting + ": the file exists: add --force to replace it, or choose another name"},
    {{"wrap", "-o", "/tmp/x.sif", "--format", "zip", "--dir", kDocsDir},
     "--format zip: expected sif or squashfs"},
    {{"wrap", "-o", "/tmp/x.sif", "--base", kNotAnImage},
     "container image " + kNotAnImage +
         ": neither a SIF file nor a SquashFS file system (no SIF_MAGIC, no hsqs superblock): "
         "build one with distrun wrap",
     false,
     {},
     ExitCode::kData},
    {{"wrap", "-o", "/tmp/x.sif", "--base", "/nonexistent-distrun/b.sif"},
     "container image /nonexistent-distrun/b.sif: cannot open: No such file or directory: give "
     "the path of a .sif or SquashFS file (distrun wrap makes one)",
     false,
     {},
     ExitCode::kNoInput},
    {{"wrap", "-o", "/tmp/x.sif", "--apt", "python3", "--base", "/tmp/b.sif"},
     "--apt with --base /tmp/b.sif: distrun wraps packages into a new Debian system only, not "
     "into an existing image: list every package in one --apt build, or add your files to the "
     "base with --dir"},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kDocsDir, "--env", "NO_VALUE"},
     "--env NO_VALUE: expected NAME=VALUE with NAME made of letters, digits and _ (--env "
     "OMP_NUM_THREADS=8)"},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kDocsDir, "--tmpdir", "/nonexistent-distrun"},
     "staging folder /nonexistent-distrun (--tmpdir, else $TMPDIR, else /tmp): not a folder "
     "distrun can write in: create it, or choose another with --tmpdir",
     false,
     {},
     ExitCode::kIo},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kDocsDir},
     "wrap: cp not found on PATH: install the Debian package coreutils (scripts/install-deps "
     "does)",
     false,
     {{"PATH", "/nonexistent-distrun"}},
     ExitCode::kNotFound},
    {{"wrap", "-o", "/tmp/x.sif", "--dirs", kDocsDir},
     "wrap: unknown flag --dirs: did you mean --dir?"},
    {{"wrap", "-o", "/tmp/x.sif", "--dir", kDocsDir, "extra"},
     "wrap: unexpected argument 'extra': sources are flags (--apt, --dir, --base) and the image "
     "is -o IMAGE"},
};
INSTANTIATE_TEST_SUITE_P(Wrap, DistrunMistakeTest, ::testing::ValuesIn(kWrapMistakes));

// distrun plot: refused before gnuplot runs (nothing "gnuplot" started).
// Its inputs: a metrics file and a trace (testdata), README.md as a file
// that is no JSON, and a JSON file that is neither metrics nor trace.
using testing::kPlotData;
const std::string kMetrics = kPlotData + "/linear_2ranks.json";
const std::string kNotMetrics = kPlotData + "/not_metrics.json";
const Mistake kPlotMistakes[] = {
    {{"plot"},
     "plot: expected a metrics file: distrun plot METRICS.json -o FILE.png|svg (or --compare "
     "A.json B.json, or --trace TRACE.json)"},
    {{"plot", kMetrics}, "plot: -o FILE is required: the image to write (FILE.png or FILE.svg)"},
    {{"plot", kMetrics, "-o", "/tmp/fig.jpg"},
     "-o /tmp/fig.jpg: expected a file name ending in .png or .svg (the image's format follows "
     "it)"},
    {{"plot", kMetrics, "-o", "/tmp/fig.png", "--size", "big"},
     "--size big: expected WIDTHxHEIGHT in pixels, each 200 to 10000 (--size 1200x800)"},
    {{"plot", kMetrics, "-o", "/tmp/fig.png", "--sizes", "800x600"},
     "plot: unknown flag --sizes: did you mean --size?"},
    {{"plot", kMetrics, kMetrics, "-o", "/tmp/fig.png"},
     "plot: 2 metrics files given: plot one, or compare two with --compare A.json B.json"},
    {{"plot", "--compare", kMetrics, "-o", "/tmp/fig.png"},
     "--compare: expected two metrics files (--compare A.json B.json), got 1"},
    {{"plot", "--trace", "t.json", kMetrics, "-o", "/tmp/fig.png"},
     "--trace t.json: a trace is drawn alone: leave out the metrics file " + kMetrics},
    {{"plot", "--trace", "t.json", "--compare", "-o", "/tmp/fig.png"},
     "--trace with --compare: draw one trace, or compare two metrics files"},
    {{"plot", kMetrics, "-o", "/tmp/fig.png", "--from", "5"},
     "--from: only with --trace (a window of the timeline, in milliseconds)"},
    {{"plot", "--trace", "t.json", "-o", "/tmp/fig.png", "--from", "9", "--to", "3"},
     "--from 9 --to 3: expected FROM below TO (milliseconds from the trace's first span)"},
    {{"plot", kMetrics, "-o", "/nonexistent-distrun/fig.png"},
     "-o /nonexistent-distrun/fig.png: the folder /nonexistent-distrun does not exist: create "
     "it, or choose another path",
     false,
     {},
     ExitCode::kIo},
    {{"plot", "/nonexistent-distrun/m.json", "-o", "/tmp/fig.png"},
     "metrics file /nonexistent-distrun/m.json: cannot open: No such file or directory: give the "
     "file `distrun train --metrics FILE` wrote",
     false,
     {},
     ExitCode::kNoInput},
    {{"plot", kNotMetrics, "-o", "/tmp/fig.png"},
     "metrics file " + kNotMetrics +
         ": expected the JSON `distrun train --metrics FILE` writes (an object with an \"epochs\" "
         "array): key 'epochs' not found",
     false,
     {},
     ExitCode::kData},
    {{"plot", kPlotData + "/two_ranks_trace.json", "-o", "/tmp/fig.png"},
     "metrics file " + kPlotData +
         "/two_ranks_trace.json: this is a trace (it has \"traceEvents\"), not a metrics file: "
         "draw it with distrun plot --trace " +
         kPlotData + "/two_ranks_trace.json -o FILE.png",
     false,
     {},
     ExitCode::kData},
    {{"plot", kNotAnImage, "-o", "/tmp/fig.svg"},
     "metrics file " + kNotAnImage +
         ": expected the JSON `distrun train --metrics FILE` writes (an object with an \"epochs\" "
         "array): parse error at line 1",
     true,
     {},
     ExitCode::kData},
    {{"plot", "--trace", "/nonexistent-distrun/t.json", "-o", "/tmp/fig.png"},
     "trace /nonexistent-distrun/t.json: cannot open: No such file or directory: give a Chrome "
     "trace (`distrun trace merge -o FILE` writes one)",
     false,
     {},
     ExitCode::kNoInput},
    {{"plot", "--trace", kNotMetrics, "-o", "/tmp/fig.png"},
     "trace " + kNotMetrics +
         ": expected a Chrome trace, a JSON object with a \"traceEvents\" array (what `distrun "
         "trace merge` writes)",
     false,
     {},
     ExitCode::kData},
    {{"plot", "--trace", kPlotData + "/two_ranks_trace.json", "-o", "/tmp/fig.png", "--from",
      "900000"},
     "--from 900000: no span of trace " + kPlotData +
         "/two_ranks_trace.json lies in this window (its spans cover 0 to 11.5 ms)"},
};
INSTANTIATE_TEST_SUITE_P(Plot, DistrunMistakeTest, ::testing::ValuesIn(kPlotMistakes));

}  // namespace
}  // namespace distrun::cli
