// Mistakes in the environment distrun reads (mistakes_table.h): each error
// names the variable read, and those about the variables that place a task
// say how to clear stale ones.
#include <algorithm>

#include "distrun/cli/mistakes_table.h"

namespace distrun::cli {
namespace {

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

}  // namespace
}  // namespace distrun::cli
