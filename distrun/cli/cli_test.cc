#include "distrun/cli/cli.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/cli/build_info.h"
#include "distrun/common/error.h"
#include "distrun/config.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cli {
namespace {

using ::testing::HasSubstr;

// Runs `distrun ARGS` against a map environment and captures everything.
struct CliRun {
  CliRun() = default;
  explicit CliRun(std::map<std::string, std::string> vars) : env(std::move(vars)) {}

  ExitCode operator()(const std::vector<std::string>& args) {
    CliContext ctx{.env = env,
                   .out = out,
                   .err = err,
                   .hostFacts =
                       [] {
                         return HostFacts{"node1", 4};
                       },
                   .builtinSiteDir = siteDir(),
                   .exec =
                       [this](const auto& argv, const auto& vars) {
                         execArgv = argv;
                         execVars = vars;
                       },
                   .toolDir = "/opt/distrun/bin"};
    return static_cast<ExitCode>(runCli(args, ctx));
  }
  static std::string siteDir() { return std::string(DISTRUN_SOURCE_DIR) + "/share/sites"; }
  std::string value(const std::string& name) const {
    for (const auto& [n, v] : execVars) {
      if (n == name) return v;
    }
    return "<unset>";
  }

  MapEnvironment env;
  std::ostringstream out, err;
  std::vector<std::string> execArgv;
  std::vector<std::pair<std::string, std::string>> execVars;
};

TEST(HostnamesCommandTest, ExpandsArgumentOrJobNodelist) {
  CliRun run;
  EXPECT_EQ(run({"hostnames", "n[1-2],gpu01"}), ExitCode::kSuccess);
  EXPECT_EQ(run.out.str(), "n1\nn2\ngpu01\n");
  CliRun inJob(std::map<std::string, std::string>{{"SLURM_JOB_NODELIST", "c[08-10]"}});
  EXPECT_EQ(inJob({"hostnames"}), ExitCode::kSuccess);
  EXPECT_EQ(inJob.out.str(), "c08\nc09\nc10\n");
}

TEST(HostnamesCommandTest, BracketsAreNotTakenAsParserSyntax) {
  CliRun run;
  EXPECT_EQ(run({"hostnames", "[1-2][3-4]", "[7]"}), ExitCode::kSuccess);
  EXPECT_EQ(run.out.str(), "13\n14\n23\n24\n7\n");
  CliRun bad;
  EXPECT_EQ(bad({"hostnames", "[a]"}), ExitCode::kConfig);
}

TEST(HostnamesCommandTest, Compress) {
  CliRun run;
  EXPECT_EQ(run({"hostnames", "--compress", "n1 n2 n3 n7"}), ExitCode::kSuccess);
  EXPECT_EQ(run.out.str(), "n[1-3,7]\n");
}

TEST(HostnamesCommandTest, InvalidListIsAConfigError) {
  CliRun run;
  EXPECT_EQ(run({"hostnames", "a[1-2"}), ExitCode::kConfig);
  EXPECT_EQ(run.err.str(),
            "distrun: error: invalid hostlist 'a[1-2': expected ']' (the '[' "
            "at column 2 is not closed) at column 6, found the end of the "
            "list\n");
  EXPECT_EQ(run.out.str(), "");
}

TEST(HostnamesCommandTest, NoListAndNoJobIsAUsageError) {
  CliRun run;
  EXPECT_EQ(run({"hostnames"}), ExitCode::kUsage);
  EXPECT_THAT(run.err.str(), HasSubstr("no HOSTLIST given"));
}

TEST(CliTest, UnknownFlagOrCommandIsAUsageError) {
  CliRun run;
  EXPECT_EQ(run({"env", "--frobnicate"}), ExitCode::kUsage);
  EXPECT_THAT(run.err.str(), ::testing::StartsWith("distrun: error: "));
  CliRun none;
  EXPECT_EQ(none({}), ExitCode::kUsage);
  CliRun format;
  EXPECT_EQ(format({"env", "--format", "yaml"}), ExitCode::kUsage);
}

TEST(CliTest, HelpGoesToStdoutAndSucceeds) {
  CliRun run;
  EXPECT_EQ(run({"--help"}), ExitCode::kSuccess);
  EXPECT_THAT(run.out.str(), HasSubstr("hostnames"));
  EXPECT_THAT(run.out.str(), HasSubstr("exec"));
}

std::map<std::string, std::string> slurmTask() {
  return {{"SLURM_JOB_ID", "55"},
          {"SLURM_STEP_ID", "1"},
          {"SLURM_PROCID", "2"},
          {"SLURM_NODEID", "1"},
          {"SLURM_LOCALID", "0"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_STEP_NUM_NODES", "2"},
          {"SLURM_STEP_TASKS_PER_NODE", "2,1"},
          {"SLURM_STEP_NODELIST", "node[1-2]"},
          {"MASTER_PORT", "6000"},
          {"RANK", "0"}};
}

TEST(EnvCommandTest, ShFormatSaysWhatWasKeptAndReplaced) {
  CliRun run(slurmTask());
  EXPECT_EQ(run({"env", "--site", "none"}), ExitCode::kSuccess);
  std::string out = run.out.str();
  EXPECT_THAT(out, HasSubstr("# distrun env: slurm, rank 2 of 3 (node 1 of 2, "
                             "local rank 0 of 1)\n"));
  EXPECT_THAT(out, HasSubstr("export RANK=2  # replaced RANK=0 from the "
                             "environment\n"));
  EXPECT_THAT(out, HasSubstr("export MASTER_ADDR=node1\n"));
  EXPECT_THAT(out, HasSubstr("export MASTER_PORT=6000  # kept: already set "
                             "in the environment\n"));
  EXPECT_THAT(out, HasSubstr("export TORCHELASTIC_USE_AGENT_STORE=False\n"));
}

TEST(EnvCommandTest, JsonFormat) {
  CliRun run(slurmTask());
  EXPECT_EQ(run({"env", "--format", "json"}), ExitCode::kSuccess);
  auto doc = nlohmann::json::parse(run.out.str());
  EXPECT_EQ(doc["scheduler"], "slurm");
  EXPECT_EQ(doc["site"], "generic");
  EXPECT_EQ(doc["env"]["WORLD_SIZE"], "3");
  EXPECT_EQ(doc["env"]["GROUP_RANK"], "1");
  EXPECT_EQ(doc["kept"], nlohmann::json::array({"MASTER_PORT"}));
  EXPECT_EQ(doc["replaced"]["RANK"], "0");
  EXPECT_EQ(doc["build"], nlohmann::json::parse(toJson(thisBuild()).dump()));
}

// `distrun --version`: the version and the commit the build came from,
// then which backends and optional parts are in it, as CMake found them.
TEST(CliTest, VersionNamesTheCommitAndThePartsBuiltIn) {
  CliRun run;
  EXPECT_EQ(run({"--version"}), ExitCode::kSuccess);
  const std::string out = run.out.str();
  EXPECT_THAT(out, ::testing::MatchesRegex(
                       "distrun [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit ([0-9a-f]{12}|unknown), "
                       "GNU [0-9.]+ [A-Za-z]*\\)\n(.|\n)*"));
  EXPECT_THAT(out, HasSubstr(DISTRUN_WITH_MPI ? "backends: gloo, mpi (" : "backends: gloo; "));
  EXPECT_THAT(out, HasSubstr(DISTRUN_WITH_NCCL
                                 ? "; nccl: built (nccl, rccl; the library loaded at run time)\n"
                                 : "; nccl: not built\n"));
  EXPECT_THAT(out, HasSubstr("\ngpu: "));
  if (DISTRUN_WITH_NCCL) {
    EXPECT_THAT(out, ::testing::ContainsRegex(
                         "\ngpu: CUDA [0-9]+\\.[0-9]+\\.[0-9]+, NCCL [0-9]+\\.[0-9]+\\.[0-9]+ "
                         "\\(found at build time\\)\n"));
  } else {
    EXPECT_THAT(out, ::testing::Not(HasSubstr("NCCL ")));
  }
  EXPECT_THAT(out, ::testing::ContainsRegex("training: LibTorch [0-9]+\\.[0-9]+"));
  EXPECT_THAT(out, HasSubstr("containers: built in"));
  const BuildInfo build = thisBuild();
  EXPECT_EQ(build.backends.front(), "gloo");
  EXPECT_EQ(build.mpiLibrary.empty(), !DISTRUN_WITH_MPI);
}

// A build with -DDISTRUN_TRAIN=OFF (the launcher alone, no LibTorch) says
// so, and its JSON has no LibTorch version.
TEST(CliTest, VersionOfABuildWithoutTheTrainingRuntimeSaysSo) {
  BuildInfo build = thisBuild();
  build.libtorch = "";
  EXPECT_THAT(versionText(build),
              HasSubstr("\ntraining: not built (-DDISTRUN_TRAIN=OFF: no distrun-train, no "
                        "libdistrun training library)\n"));
  EXPECT_TRUE(toJson(build)["libtorch"].is_null());
}

// The GPU toolchain line for each thing CMake may have found: both, CUDA
// alone, or neither; JSON has null where nothing was found.
TEST(CliTest, VersionNamesTheGpuToolchainFoundOrItsAbsence) {
  BuildInfo build = thisBuild();
  build.cuda = "13.0.88";
  build.ncclLibrary = "2.28.9";
  EXPECT_THAT(versionText(build),
              HasSubstr("\ngpu: CUDA 13.0.88, NCCL 2.28.9 (found at build time)\n"));
  EXPECT_EQ(toJson(build)["nccl_library"], "2.28.9");
  build.ncclLibrary = "";
  EXPECT_THAT(versionText(build), HasSubstr("\ngpu: CUDA 13.0.88, no NCCL found at build time\n"));
  build.cuda = "";
  EXPECT_THAT(
      versionText(build),
      HasSubstr("\ngpu: no CUDA toolkit (none found at build time, or -DDISTRUN_NCCL=OFF)\n"));
  EXPECT_TRUE(toJson(build)["cuda"].is_null());
  EXPECT_TRUE(toJson(build)["nccl_library"].is_null());
}

TEST(EnvCommandTest, ContradictoryEnvironmentIsAConfigError) {
  auto vars = slurmTask();
  vars["SLURM_PROCID"] = "3";
  CliRun run(vars);
  EXPECT_EQ(run({"env"}), ExitCode::kConfig);
  EXPECT_EQ(run.err.str(),
            "distrun: error: SLURM_PROCID=3 contradicts SLURM_STEP_NUM_TASKS=3: "
            "expected SLURM_PROCID < SLURM_STEP_NUM_TASKS; if left from an earlier shell or "
            "job, clear them: eval \"$(distrun env --unset)\"\n");
}

// docs/sites.md offers `distrun env --site NAME` to try a profile: outside
// a job LUMI's ${SLURM_JOB_ID} folders read "nojob".
TEST(EnvCommandTest, ASiteProfileTriedOutsideAJobNamesNoJob) {
  CliRun run(std::map<std::string, std::string>{{"USER", "ada"}});
  EXPECT_EQ(run({"env", "--site", "lumi"}), ExitCode::kSuccess) << run.err.str();
  EXPECT_THAT(run.out.str(),
              HasSubstr("export MIOPEN_USER_DB_PATH=/tmp/ada-miopen-cache-nojob-0  # site "));
}

TEST(EnvCommandTest, UnknownSiteIsAConfigError) {
  CliRun run;
  EXPECT_EQ(run({"env", "--site", "nowhere"}), ExitCode::kConfig);
  EXPECT_THAT(run.err.str(), HasSubstr("site profile 'nowhere' not found"));
  EXPECT_THAT(run.err.str(), HasSubstr("generic, lumi, marenostrum5"));
}

TEST(ExecCommandTest, ExecsProgramWithContract) {
  CliRun run(slurmTask());
  EXPECT_EQ(run({"exec", "--", "python3", "train.py", "--lr", "0.1"}), ExitCode::kSuccess);
  EXPECT_THAT(run.execArgv, ::testing::ElementsAre("python3", "train.py", "--lr", "0.1"));
  EXPECT_EQ(run.value("RANK"), "2");
  EXPECT_EQ(run.value("LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(run.value("MASTER_ADDR"), "node1");
}

// exec is cluster::thisTask with the detected site profile: the host's
// CPUs (4 in CliRun) over the node's one task, and the generic profile.
TEST(ExecCommandTest, ThreadsFromTheHostsCpusAndTheDetectedSite) {
  CliRun run(slurmTask());
  EXPECT_EQ(run({"exec", "--", "true"}), ExitCode::kSuccess);
  EXPECT_EQ(run.value("OMP_NUM_THREADS"), "4");
  EXPECT_EQ(run.value("DISTRUN_SITE"), "generic");
  CliRun noSite(slurmTask());
  EXPECT_EQ(noSite({"exec", "--site", "none", "--", "true"}), ExitCode::kSuccess);
  EXPECT_EQ(noSite.value("DISTRUN_SITE"), "<unset>");
}

// --gpu-bind: the task's GPU from the plan as cuda:LOCAL_RANK of what srun
// gave it; by default nothing is set.
TEST(ExecCommandTest, GpuBindMakesThePlansGpuCudaLocalRank) {
  auto vars = slurmTask();
  vars["DISTRUN_NODE_TOPOLOGY"] =
      std::string(DISTRUN_SOURCE_DIR) + "/distrun/binding/testdata/two_cpus_two_gpus.xml";
  CliRun plain(vars);
  EXPECT_EQ(plain({"exec", "--site", "none", "--", "true"}), ExitCode::kSuccess);
  EXPECT_EQ(plain.value("CUDA_VISIBLE_DEVICES"), "<unset>");
  CliRun closest(vars);
  EXPECT_EQ(closest({"exec", "--site", "none", "--gpu-bind", "closest", "--", "true"}),
            ExitCode::kSuccess);
  EXPECT_EQ(closest.value("CUDA_VISIBLE_DEVICES"), "<unset>") << "the task sees both GPUs";
  EXPECT_EQ(closest.value("DISTRUN_LOCAL_DEVICE"), "0");
  vars["CUDA_VISIBLE_DEVICES"] = "1,0";
  CliRun inherited(vars);
  EXPECT_EQ(inherited({"exec", "--site", "none", "--gpu-bind", "map:1", "--", "true"}),
            ExitCode::kSuccess);
  EXPECT_EQ(inherited.value("CUDA_VISIBLE_DEVICES"), "0,1") << "position 1 made cuda:0";
  vars.erase("CUDA_VISIBLE_DEVICES");
  CliRun lumiNode(vars);
  EXPECT_EQ(lumiNode({"exec", "--site", "lumi", "--gpu-bind", "map:5", "--", "true"}),
            ExitCode::kSuccess);
  EXPECT_EQ(lumiNode.value("ROCR_VISIBLE_DEVICES"), "5,1,2,3,4,0,6,7")
      << "LUMI's node description, its variable, GCD 5 as cuda:0";
  EXPECT_EQ(lumiNode.value("CUDA_VISIBLE_DEVICES"), "<unset>");
  EXPECT_EQ(lumiNode.value("DISTRUN_LOCAL_DEVICE"), "0");
}

TEST(ExecCommandTest, ProgramWithoutDashDash) {
  CliRun run;
  EXPECT_EQ(run({"exec", "env", "-0"}), ExitCode::kSuccess);
  EXPECT_THAT(run.execArgv, ::testing::ElementsAre("env", "-0"));
}

TEST(ExecCommandTest, MissingProgramIsAUsageError) {
  CliRun run;
  EXPECT_EQ(run({"exec"}), ExitCode::kUsage);
  EXPECT_THAT(run.err.str(), HasSubstr("no PROGRAM given"));
}

TEST(ExecCommandTest, RealExecOfMissingProgramIs127) {
  try {
    execProgram({"/nonexistent/distrun-test-program"}, {});
    FAIL();
  } catch (const SystemError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kNotFound);
    EXPECT_STREQ(e.what(),
                 "exec: cannot run '/nonexistent/distrun-test-program': No "
                 "such file or directory");
  }
}

TEST(CliTest, BenchExecsTheBenchBinaryWithItsArguments) {
  CliRun cli;
  EXPECT_EQ(cli({"bench", "all_reduce", "-b", "8", "--help"}), ExitCode::kSuccess);
  EXPECT_EQ(cli.execArgv, (std::vector<std::string>{"/opt/distrun/bin/distrun-bench", "all_reduce",
                                                    "-b", "8", "--help"}));
}

}  // namespace
}  // namespace distrun::cli
