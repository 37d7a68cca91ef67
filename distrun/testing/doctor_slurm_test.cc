// `distrun doctor` on the local Slurm cluster: every check passes on healthy
// nodes, and each failure injected on one node gives its own row naming
// that node.
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/slurm_fixture.h"

namespace distrun::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Every node's task: `distrun doctor FLAGS`, after INJECT on node2 only (a
// shell snippet: `export TMPDIR=...`, or `prefix="taskset -c 1"` to start
// the doctor through a command).
std::string probeScript(const std::string& flags, const std::string& inject) {
  return "prefix=''; if [ \"$SLURMD_NODENAME\" = node2 ]; then " +
         (inject.empty() ? std::string(":") : inject) + "; fi; exec $prefix " +
         quote(binaryPath("distrun")) + " doctor " + flags;
}

class DoctorTest : public SlurmTest {
 protected:
  void SetUp() override {
    SlurmTest::SetUp();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("doctor-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    ::umount2((dir_ / "full").c_str(), MNT_DETACH);
    std::filesystem::remove_all(dir_);
  }

  // One doctor task per node of `nodes`, each holding its node's two cores.
  CommandResult doctor(const std::string& flags, const std::string& inject = "",
                       const std::string& variables = "", int nodes = 3) {
    return slurm(variables + " timeout 300 srun -N" + std::to_string(nodes) +
                 " --ntasks-per-node=1 --cpus-per-task=2 --cpu-bind=none sh -c " +
                 quote(probeScript(flags, inject)));
  }

  // The result of `check` on `node` in a --format json report.
  static json resultOf(const json& report, const std::string& check, const std::string& node) {
    for (const json& c : report.at("checks")) {
      if (c.at("name") != check) continue;
      for (const json& r : c.at("results")) {
        if (r.at("node") == node) return r;
      }
    }
    return json{{"state", "absent"}, {"detail", ""}, {"fix", ""}};
  }
  static std::string stateOf(const json& report, const std::string& check,
                             const std::string& node) {
    return resultOf(report, check, node).at("state").get<std::string>();
  }
  // The nodes whose `check` failed.
  static std::vector<std::string> failedOn(const json& report, const std::string& check) {
    std::vector<std::string> nodes;
    for (const std::string node : {"node1", "node2", "node3"}) {
      if (stateOf(report, check, node) == "fail") nodes.push_back(node);
    }
    return nodes;
  }
  static json parse(const CommandResult& r) {
    try {
      return json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << r.err;
      return json::object();
    }
  }
  // Checks this machine can pass: all but Python's when torch is missing.
  static std::string healthyChecks() {
    if (pythonTorchUnavailableReason().empty()) return "";
    std::cout << "note: " << pythonTorchUnavailableReason() << ": the python check is left out\n";
    return " --python /usr/bin/python3 --checks answer,scheduler,hostnames,master-port,clock,"
           "cpu-binding,cgroup,shm,limits,tmpdir,snapshot-dir,network,gpu,matmul,straggler,"
           "allreduce";
  }

  std::filesystem::path dir_;
};

using Nodes = std::vector<std::string>;

// The three local nodes share this machine's two cores, so their matrix
// products may take turns: only a node far slower than the median (the
// injected straggler below is ten times slower) counts as one here.
constexpr const char* kSharedCoresMargin = " --straggler-margin 300";

TEST_F(DoctorTest, AHealthyClusterPassesEveryCheck) {
  CommandResult r = doctor("--format json --python /usr/bin/python3" +
                           std::string(kSharedCoresMargin) + healthyChecks());
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(report.at("nodes"), json({"node1", "node2", "node3"}));
  for (const json& check : report.at("checks")) {
    for (const json& result : check.at("results")) {
      const std::string state = result.at("state");
      EXPECT_TRUE(state == "ok" || state == "skip") << check.at("name") << ": " << result;
      if (state == "skip") {
        EXPECT_NE(result.at("detail"), "") << check.at("name");
      }
    }
  }
  EXPECT_EQ(stateOf(report, "allreduce", "node3"), "ok");
  EXPECT_EQ(stateOf(report, "clock", "node2"), "ok");
}

TEST_F(DoctorTest, TheTableFoldsTheNodesAndSaysAllPassed) {
  CommandResult r = doctor("--checks scheduler,hostnames,tmpdir,shm,clock");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("node[1-3]"));
  EXPECT_THAT(r.out, HasSubstr("all passed"));
}

TEST_F(DoctorTest, AWrongCpuAffinityFailsOnItsNode) {
  CommandResult r = doctor("--format json --checks cpu-binding", "prefix='taskset -c 1'");
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(failedOn(report, "cpu-binding"), Nodes{"node2"}) << r.out;
  EXPECT_NE(resultOf(report, "cpu-binding", "node2").at("fix"), "");
}

TEST_F(DoctorTest, AFullTmpdirFailsOnItsNodeWithTheFreeSpace) {
  const std::filesystem::path full = dir_ / "full";
  std::filesystem::create_directories(full);
  if (::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (not root?)";
  }
  runCommand("dd if=/dev/zero of=" + quote((full / "filler").string()) + " bs=64k 2>/dev/null");
  CommandResult r = doctor("--checks tmpdir", "export TMPDIR=" + quote(full.string()));
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("fail tmpdir on node2: ")) << r.out;
  EXPECT_THAT(r.out, HasSubstr(full.string())) << r.out;
  EXPECT_THAT(r.out, HasSubstr("fix: ")) << r.out;
}

TEST_F(DoctorTest, ATakenMasterPortFailsOnTheMasterNode) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t length = sizeof(address);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(address.sin_port);
  CommandResult r =
      doctor("--format json --checks master-port", "", "MASTER_PORT=" + std::to_string(port));
  ::close(listener);
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(failedOn(report, "master-port"), Nodes{"node1"}) << r.out;
  EXPECT_THAT(resultOf(report, "master-port", "node1").at("detail").get<std::string>(),
              HasSubstr(std::to_string(port)));
}

TEST_F(DoctorTest, AnInterfaceThatDoesNotExistFailsOnItsNode) {
  CommandResult r = doctor("--format json --checks network", "export NCCL_SOCKET_IFNAME=nosuch0");
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(failedOn(report, "network"), Nodes{"node2"}) << r.out;
  EXPECT_THAT(resultOf(report, "network", "node2").at("detail").get<std::string>(),
              HasSubstr("nosuch0"));
}

TEST_F(DoctorTest, APythonThatCannotImportTorchFailsOnItsNode) {
  std::ofstream(dir_ / "torch.py") << "raise ImportError('this torch is broken on purpose')\n";
  CommandResult r = doctor("--format json --python /usr/bin/python3 --checks python",
                           "export PYTHONPATH=" + quote(dir_.string()));
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(stateOf(report, "python", "node2"), "fail") << r.out;
  EXPECT_THAT(resultOf(report, "python", "node2").at("detail").get<std::string>(),
              HasSubstr("broken on purpose"));
  if (pythonTorchUnavailableReason().empty()) {
    EXPECT_EQ(failedOn(report, "python"), Nodes{"node2"}) << r.out;
  }
}

TEST_F(DoctorTest, AHungProbeIsEndedByItsTimeLimit) {
  std::ofstream(dir_ / "torch.py") << "import time\ntime.sleep(600)\n";
  CommandResult r =
      doctor("--format json --time-limit 20 --python /usr/bin/python3 --checks python",
             "export PYTHONPATH=" + quote(dir_.string()));
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(stateOf(report, "python", "node2"), "fail") << r.out;
  EXPECT_THAT(resultOf(report, "python", "node2").at("detail").get<std::string>(),
              HasSubstr("did not finish within 20 s"));
}

// Four busy loops share node2's core with its doctor: its matrix product
// takes several times the others'. The doctor starts once every loop runs
// (taskset has become the looping shell): on a loaded machine the loops
// started late and node2's product ran before them.
TEST_F(DoctorTest, ASlowNodeIsFlaggedAsStraggler) {
  const std::string busy = "taskset -c 1 sh -c 'while :; do :; done'";
  const std::string waitForLoops =
      "for p in $pids; do for i in $(seq 100); do "
      "[ \"$(cat /proc/$p/comm 2>/dev/null)\" = sh ] && break; sleep 0.05; done; done; ";
  CommandResult r = doctor("--format json --checks matmul,straggler",
                           "pids=''; for i in 1 2 3 4; do " + busy +
                               " & pids=\"$pids $!\"; done; trap 'kill $pids' EXIT; " +
                               waitForLoops + "taskset -c 1 " + quote(binaryPath("distrun")) +
                               " doctor --format json --checks matmul,straggler; exit $?");
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(failedOn(report, "straggler"), Nodes{"node2"}) << r.out;
}

TEST_F(DoctorTest, ANodeThatNeverAnswersIsReportedAfterTheWindow) {
  // node2's task ends without reporting (as one that crashed or never started).
  CommandResult r = doctor("--format json --time-limit 5 --checks tmpdir", "exit 0");
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  json report = parse(r);
  EXPECT_EQ(failedOn(report, "answer"), Nodes{"node2"}) << r.out;
  EXPECT_THAT(resultOf(report, "answer", "node2").at("detail").get<std::string>(),
              HasSubstr("did not report within 40 s"));
}

TEST_F(DoctorTest, InsideAnAllocationItStartsItselfOnEveryNode) {
  CommandResult r = slurm("timeout 300 salloc -N2 " + quote(binaryPath("distrun")) +
                          " doctor --format json --checks scheduler,tmpdir,clock");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_EQ(parse(r).at("nodes"), json({"node1", "node2"}));
}

// `distrun submit`: `-- doctor` as the job, and `--doctor` before a
// training that it then keeps from starting.
class SubmitDoctorTest : public DoctorTest {
 protected:
  CommandResult submitAndWait(const std::string& args, const std::string& variables = "") {
    return runCommand("cd " + quote(dir_.string()) + " && " + cluster_->env() + variables +
                      " timeout 300 " + distrun() + " submit --wait --output " +
                      quote((dir_ / "%j.out").string()) + " " + args);
  }
};

TEST_F(SubmitDoctorTest, DoctorAsTheJobChecksEveryNode) {
  CommandResult r = submitAndWait("--nodes 2 -- doctor --checks scheduler,tmpdir,clock,allreduce");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("node[1-2]"));
  EXPECT_THAT(r.out, HasSubstr("all passed"));
}

TEST_F(SubmitDoctorTest, AFailedDoctorKeepsTheTrainingFromStarting) {
  CommandResult r =
      submitAndWait("--nodes 2 --doctor -- train --nproc-per-node 1 linear --epochs 1",
                    " NCCL_SOCKET_IFNAME=nosuch0");
  EXPECT_EQ(r.exitCode, 80) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("fail network on node[1-2]: "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("distrun-train:")));
}

TEST_F(SubmitDoctorTest, APassingDoctorLetsTheTrainingRun) {
  // The nodes share this machine's cores with the other tests (see
  // kSharedCoresMargin), which a CI run once made a straggler of.
  CommandResult r = submitAndWait(
      "--nodes 2 --doctor --doctor-arg=--straggler-margin=300 -- train --nproc-per-node 1 "
      "linear --epochs 1");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("all passed"));
  EXPECT_THAT(r.out, HasSubstr("distrun-train: linear on 2 ranks"));
}

// distrun-doctor itself checks the doctor step's flags before sbatch.
TEST_F(SubmitDoctorTest, ADoctorFlagMistakeIsRefusedBeforeTheJobIsSubmitted) {
  CommandResult r = submitAndWait(
      "--nodes 2 --doctor --doctor-arg=--stragler-margin=50 -- train --nproc-per-node 1 linear");
  EXPECT_EQ(r.exitCode, 64) << r.out << r.err;
  EXPECT_EQ(r.err,
            "distrun: error: doctor: unknown flag --stragler-margin: did you mean "
            "--straggler-margin?\n");
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Submitted batch job")));
}

}  // namespace
}  // namespace distrun::testing
