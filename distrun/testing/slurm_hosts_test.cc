// The local Slurm cluster whose nodes are hosts of network_hosts.h (label
// netns): slurmd of nid001 and nid002 each in its own network namespace,
// with its own name, addresses and hosts file, slurmctld on this machine.
// What a user runs across a cluster's nodes runs here across two network
// stacks: srun, exec, run, submit --wait, doctor and bench, the store on
// the management network (eth0) and the collectives on the fast one
// (hsn0) where the site's GLOO_SOCKET_IFNAME says.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/local_slurm_cluster.h"
#include "distrun/testing/network_hosts.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;

class SlurmHostsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skipReason_ = NetworkHosts::unavailable();
    if (skipReason_.empty()) skipReason_ = LocalSlurmCluster::unavailableReason();
    if (!skipReason_.empty()) return;
    hosts_ = std::make_unique<NetworkHosts>(2);
    const std::string here = hosts_->reachFromHere();
    cluster_ = std::make_unique<LocalSlurmCluster>(
        2, hosts_->environment() + " NETWORK_HOSTS_HERE=" + here);
  }
  static void TearDownTestSuite() {
    cluster_.reset();
    hosts_.reset();
  }
  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
    dir_ = std::filesystem::path(::testing::TempDir()) /
           fmt::format("slurm-hosts-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "sites");
    // The site's profile: its collectives on the fast network.
    std::ofstream(dir_ / "sites/cluster.site")
        << "description = test cluster: Slingshot-like hsn0\n"
           "set GLOO_SOCKET_IFNAME = hsn0\nset NCCL_SOCKET_IFNAME = hsn0\n";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `command` as a user on this machine runs it against the cluster, from
  // the test's folder, with the site's profile found.
  CommandResult slurm(const std::string& command) const {
    return runCommand(fmt::format("cd {} && {} DISTRUN_SITE_PATH={} timeout 300 {}",
                                  quote(dir_.string()), cluster_->env(),
                                  quote((dir_ / "sites").string()), command));
  }
  static std::string distrun() { return quote(binaryPath("distrun")); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // What each host sent on `interface` since the hosts were made.
  static std::uint64_t sent(int host, const std::string& interface) {
    return hosts_->sentBytes(host, interface);
  }

  static inline std::string skipReason_;
  static inline std::unique_ptr<NetworkHosts> hosts_;
  static inline std::unique_ptr<LocalSlurmCluster> cluster_;
  std::filesystem::path dir_;
};

// srun's tasks run on the hosts: each its host's name, and distrun exec
// gives them node 0's name as MASTER_ADDR, which every host resolves to
// nid001's management address.
TEST_F(SlurmHostsTest, SrunExecRunsATaskOnEachHostMeetingAtNodeZerosName) {
  CommandResult r =
      slurm("srun -N2 --ntasks-per-node=1 " + distrun() +
            " exec -- sh -c 'echo $RANK $(hostname) $MASTER_ADDR $(getent ahostsv4 $MASTER_ADDR | "
            "head -1 | cut -d\" \" -f1)' | sort");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "0 nid001 nid001 10.10.0.1\n1 nid002 nid001 10.10.0.1\n");
}

// srun -N2 -n4 distrun bench: the hierarchical path across the hosts, its
// leaders' TCP on hsn0 as the site's profile says (through distrun exec),
// and the values right.
TEST_F(SlurmHostsTest, SrunBenchAcrossHostsTakesTheHierarchicalPathOnTheFastNetwork) {
  const std::uint64_t before[] = {sent(1, "hsn0"), sent(2, "hsn0")};
  CommandResult r = slurm("srun -N2 -n4 " + distrun() + " exec --site cluster -- " +
                          quote(binaryPath("distrun-bench")) +
                          " all_reduce -b 4M -e 4M -n 5 -w 1 --backend gloo");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("backend gloo, 4 ranks, over shared memory within each of 2 "
                               "nodes, tcp between them"));
  EXPECT_THAT(r.out, HasSubstr("# Out of bounds values : 0 OK"));
  for (int host : {1, 2}) {
    // Each leader sends half of 4 MiB twice per call, 6 calls.
    EXPECT_GE(sent(host, "hsn0") - before[host - 1], 6u * (4u << 20)) << NetworkHosts::name(host);
  }
}

// srun -N2 distrun run: an agent per host, two PyTorch gloo workers each,
// its store on nid001 (eth0) and its collectives on hsn0.
TEST_F(SlurmHostsTest, SrunRunStartsPyTorchWorkersOnBothHosts) {
  if (runCommand("/usr/bin/python3 -c 'import torch'").exitCode != 0) {
    GTEST_SKIP() << "no PyTorch for /usr/bin/python3 (python3-torch: scripts/install-deps)";
  }
  std::ofstream(path("all_reduce.py"))
      << "import os, torch, torch.distributed as dist\n"
         "dist.init_process_group('gloo')\n"
         "t = torch.ones(1 << 20)\n"
         "dist.all_reduce(t)\n"
         "print(f'rank {dist.get_rank()} on {os.uname().nodename}: {t[0].item():.0f}')\n"
         "dist.destroy_process_group()\n";
  const std::uint64_t before = sent(2, "hsn0");
  CommandResult r = slurm("srun -N2 --ntasks-per-node=1 " + distrun() +
                          " run --site cluster --nproc-per-node 2 --python /usr/bin/python3 " +
                          "--log-prefix '' all_reduce.py | sort");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out,
            "rank 0 on nid001: 4\nrank 1 on nid001: 4\nrank 2 on nid002: 4\n"
            "rank 3 on nid002: 4\n");
  EXPECT_GE(sent(2, "hsn0") - before, 4u << 20) << "nid002's share of the 4 MiB all_reduce";
}

// distrun submit --wait from this machine: the batch script runs on
// nid001, its srun starts a task on each host, and submit gives the job's
// end and exit code.
TEST_F(SlurmHostsTest, SubmitWaitRunsTheJobAcrossTheHosts) {
  CommandResult r = slurm(distrun() + " submit --wait --nodes 2 --output " + path("job.out") +
                          " -- exec -- sh -c 'echo task $RANK on $(hostname)'");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("COMPLETED with exit code 0"));
  const std::string out = slurp(path("job.out"));
  EXPECT_THAT(out, HasSubstr("task 0 on nid001"));
  EXPECT_THAT(out, HasSubstr("task 1 on nid002"));
}

// distrun doctor on both hosts: the checks between nodes (hostnames,
// clock, allreduce over Gloo) pass across the two network stacks.
TEST_F(SlurmHostsTest, DoctorAcrossHostsPassesItsChecksBetweenNodes) {
  CommandResult r = slurm("srun -N2 --ntasks-per-node=1 --cpu-bind=none " + distrun() +
                          " doctor --format json --checks hostnames,master-port,clock,network,"
                          "allreduce");
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("nodes"), nlohmann::json({"nid001", "nid002"}));
  std::map<std::string, std::string> allreduce;
  for (const nlohmann::json& check : report.at("checks")) {
    for (const nlohmann::json& result : check.at("results")) {
      const std::string state = result.at("state");
      // master-port is checked on node 0 only; the others say so.
      EXPECT_TRUE(state == "ok" || (state == "skip" && result.at("detail") != ""))
          << check.at("name") << ": " << result;
      if (check.at("name") == "allreduce") allreduce[result.at("node")] = state;
    }
  }
  EXPECT_EQ(allreduce, (std::map<std::string, std::string>{{"nid001", "ok"}, {"nid002", "ok"}}));
}

}  // namespace
}  // namespace distrun::testing
