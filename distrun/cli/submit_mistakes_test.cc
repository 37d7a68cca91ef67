// distrun submit's mistakes (mistakes_table.h): the job's flags, sbatch's
// own flags given to submit, and the job's command line, each refused
// before sbatch runs with one line and its exit code.
#include "distrun/cli/mistakes_table.h"

namespace distrun::cli {
namespace {

// distrun submit: refused before sbatch runs.
const Mistake kSubmitMistakes[] = {
    {{"submit", "--nodes", "2", "train", "mnist"},
     "submit: put the distrun command after --: distrun submit [OPTIONS] -- train mnist"},
    {{"submit", "--nodes", "2"},
     "submit: expected a distrun command after -- (run, train, bench, exec or doctor)"},
    {{"submit", "--", "trian", "mnist"},
     "submit: 'trian' is not a distrun command a batch job runs: expected run, train, bench, "
     "exec or doctor (did you mean train?)"},
    {{"submit", "--", "hostnames"},
     "submit: 'hostnames' is not a distrun command a batch job runs: expected run, train, bench, "
     "exec or doctor"},
    {{"submit", "--time", "1h", "--", "train", "mnist"},
     "--time '1h': expected Slurm's MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
     "DAYS-HOURS, DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS (e.g. 90, 1:30:00, 2-00)"},
    {{"submit", "--time", "1", "--signal-grace", "120", "--", "train", "mnist"},
     "submit: --signal-grace 120 s leaves no time to train within --time 1: shorten the grace "
     "or lengthen the limit"},
    {{"submit", "--nproc-per-node", "4", "--", "train", "--nproc-per-node", "2", "mnist"},
     "submit: --nproc-per-node 4 contradicts the command's --nproc-per-node 2: give it once"},
    {{"submit", "--site", "lumi", "--gpus-per-node", "9", "--", "exec", "--", "prog"},
     "--gpus-per-node 9: the node has 8 GPUs (from the site profile",
     true},
    {{"submit", "--site", "lumi", "--nproc-per-node", "12", "--", "exec", "--", "prog"},
     "--nproc-per-node 12 cannot share 8 GPUs evenly: use at most 8 or a multiple of 8"},
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
     "submit: unknown flag --dryrun: did you mean --dry-run? (sbatch's own flags go as "
     "--sbatch-arg=--FLAG=VALUE)"},
    // sbatch's flags given to submit, by the name the user gave.
    {{"submit", "--dry-run", "-N", "2", "--mem", "480G", "--", "run", "train.py"},
     "submit: --mem is sbatch's flag, not distrun submit's: pass it through as "
     "--sbatch-arg=--mem=480G"},
    {{"submit", "--acount", "proj", "--", "run", "train.py"},
     "submit: unknown flag --acount: did you mean --account? (sbatch's own flags go as "
     "--sbatch-arg=--FLAG=VALUE)"},
    {{"submit", "--chdir", "/x", "--", "run", "train.py"},
     "submit: --chdir is sbatch's flag, not distrun submit's: pass it through as "
     "--sbatch-arg=--chdir=/x"},
    {{"submit", "--error=F", "--", "run", "train.py"},
     "submit: --error is sbatch's flag, not distrun submit's: pass it through as "
     "--sbatch-arg=--error=F"},
    {{"submit", "--hold", "--", "run", "train.py"},
     "submit: --hold is sbatch's flag, not distrun submit's: pass it through as "
     "--sbatch-arg=--hold"},
    {{"submit", "-N", "2", "--mem", "480G", "run", "train.py"},
     "submit: --mem is sbatch's flag, not distrun submit's: pass it through as "
     "--sbatch-arg=--mem=480G"},
    // A job that would start nothing, or say one thing twice.
    {{"submit", "--", "exec"},
     "exec: no PROGRAM given: distrun exec [OPTIONS] -- PROGRAM [ARGS...]"},
    {{"submit", "--", "run"}, "run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]"},
    {{"submit", "--", "run", "--nproc-per-node", "2"},
     "run: no PROGRAM given: distrun run [OPTIONS] PROGRAM [ARGS...]"},
    {{"submit", "-N", "1", "--sbatch-arg=--nodes=8", "--", "train", "mnist"},
     "submit: --sbatch-arg=--nodes=8 sets sbatch's --nodes, which the script already writes "
     "from distrun submit's --nodes: give --nodes instead"},
    {{"submit", "--wait", "--status", "bar", "--", "train", "mnist"},
     "--status 'bar': expected auto, line, plain or none"},
    // The job's own command line, checked before it waits in the queue.
    {{"submit", "--", "train", "mnist", "--epoch", "3"},
     "train: unknown flag --epoch: did you mean --epochs (a training flag)?"},
    {{"submit", "--", "train", "mnist", "--epochs", "0"}, "--epochs 0: expected at least 1"},
    {{"submit", "--", "run", "--nproc-per-nod", "2", "train.py"},
     "run: unknown flag --nproc-per-nod: did you mean --nproc-per-node?"},
    {{"submit", "--", "exec", "-x", "--", "prog"},
     "exec: unknown flag -x (see 'distrun exec --help')"},
    {{"submit", "--doctor-arg=--straggler-margin=50", "--", "train", "mnist"},
     "submit: --doctor-arg --straggler-margin=50 is for the doctor's step, which only --doctor "
     "adds: add --doctor"},
};
INSTANTIATE_TEST_SUITE_P(Submit, DistrunMistakeTest, ::testing::ValuesIn(kSubmitMistakes));

}  // namespace
}  // namespace distrun::cli
