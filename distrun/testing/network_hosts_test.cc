// Jobs across hosts that are network namespaces of this machine
// (network_hosts.h; label netns): each host its own name, addresses and
// hosts file, a management network (eth0) and a fast one (hsn0).

#include "distrun/testing/network_hosts.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/testing/command.h"
#include "distrun/testing/launcher_fixture.h"

namespace distrun::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::uint64_t kTensorBytes = 16 << 20;  // each all_reduce's, float32

// `steps.py COUNT PAUSE`: COUNT steps of a small all_reduce, PAUSE seconds
// apart, each saying its rank and world: a job that is running when its
// network fails (and, elastic, re-forms).
constexpr const char* kSteps = R"(import sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1024)
for step in range(int(sys.argv[1])):
    dist.all_reduce(t)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} step {step}", flush=True)
    time.sleep(float(sys.argv[2]))
)";

// PyTorch's gloo all_reduce of 16 MiB, three times, under torchrun's
// variables: what a site's DDP job does on its fast network.
constexpr const char* kAllReduce = R"(import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(4 << 20)
for _ in range(3):
    dist.all_reduce(t)
print(f"rank {dist.get_rank()} on {os.uname().nodename}: {t[0].item():.0f}", flush=True)
dist.destroy_process_group()
)";

class AcrossHostsTest : public LauncherFixture {
 protected:
  void SetUp() override {
    LauncherFixture::SetUp();
    if (std::string why = NetworkHosts::unavailable(); !why.empty()) GTEST_SKIP() << why;
    if (runCommand("/usr/bin/python3 -c 'import torch'").exitCode != 0) {
      GTEST_SKIP() << "no PyTorch for /usr/bin/python3 (python3-torch: scripts/install-deps)";
    }
    write("all_reduce.py", kAllReduce);
    write("steps.py", kSteps);
    // The site's profile: its collectives on the fast network.
    write("sites/cluster.site",
          "description = test cluster: Slingshot-like hsn0\n"
          "set GLOO_SOCKET_IFNAME = hsn0\nset NCCL_SOCKET_IFNAME = hsn0\n");
  }
  void write(const std::string& name, const std::string& text) {
    runCommand("mkdir -p " + quote(path(name.substr(0, name.rfind('/') + 1))));
    std::ofstream(path(name)) << text;
  }
  // `distrun run` as node `node` of nodes_ on host `node + 1`, meeting at
  // nid001's store.
  std::string agent(int node, int port, const std::string& program,
                    const std::string& extra = "") const {
    return hosts_->on(
        node + 1,
        fmt::format("cd {} && DISTRUN_TOKEN=netns-test DISTRUN_SITE_PATH={} {} run --site cluster "
                    "--nnodes {} --node-rank {} --master-addr {} --master-port {} "
                    "--nproc-per-node 1 --python /usr/bin/python3 --join-timeout {} {} {}",
                    quote(dir_), quote(path("sites")), distrun(), nodes_, node, masterAddr_, port,
                    joinTimeout_, extra, program));
  }
  std::optional<NetworkHosts> hosts_;
  std::string masterAddr_ = NetworkHosts::name(1);  // --master-addr
  int joinTimeout_ = 20;                            // --join-timeout, s
  int nodes_ = 2;                                   // --nnodes
};

TEST(NetworkHostsTest, EachHostHasItsNameAddressesAndHostsFile) {
  if (std::string why = NetworkHosts::unavailable(); !why.empty()) GTEST_SKIP() << why;
  NetworkHosts hosts(2);
  CommandResult r = runCommand(hosts.on(2,
                                        "hostname; getent hosts nid001 nid001-hsn0; "
                                        "ip -o -4 addr show | awk '{print $2, $4}'"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out,
            "nid002\n10.10.0.1       nid001\n10.20.0.1       nid001-hsn0\n"
            "lo 127.0.0.1/8\neth0 10.10.0.2/24\nhsn0 10.20.0.2/24\n");
  // Reachable on both networks; cut off, on neither.
  auto reach = [](const std::string& address) {
    return "python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], 9), 2)' " +
           address + " 2>&1 | tail -1";
  };
  for (const char* address : {"10.10.0.2", "10.20.0.2"}) {
    EXPECT_THAT(runCommand(hosts.on(1, reach(address))).out,
                HasSubstr("Connection refused"));  // the host answers: no server on port 9
  }
  hosts.cut(2);
  EXPECT_THAT(runCommand(hosts.on(1, reach("10.20.0.2"))).out,
              Not(HasSubstr("Connection refused")));
  hosts.heal();
  EXPECT_THAT(runCommand(hosts.on(1, reach("10.20.0.2"))).out, HasSubstr("Connection refused"));
}

// The store on nid001's management address (its name), the workers'
// collectives on hsn0 as the site's profile says: each host sends the
// all_reduces' bytes on hsn0, next to nothing on eth0.
TEST_F(AcrossHostsTest, AJobOfTwoHostsRunsItsCollectivesOnTheSitesFastInterface) {
  hosts_.emplace(2);
  const int port = freePort();
  int first = startCommand(agent(0, port, "all_reduce.py"), path("node0.log"));
  CommandResult second = runCommand(agent(1, port, "all_reduce.py"));
  ASSERT_EQ(waitCommand(first), 0) << log("node0.log");
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_THAT(log("node0.log"), HasSubstr("rank 0 on nid001: 8\n"));
  EXPECT_THAT(second.out, HasSubstr("rank 1 on nid002: 8\n"));
  for (int host : {1, 2}) {
    // A ring all_reduce of two sends each tensor's half twice: 3 x 16 MiB in all.
    EXPECT_GE(hosts_->sentBytes(host, "hsn0"), 3 * kTensorBytes) << NetworkHosts::name(host);
    EXPECT_LT(hosts_->sentBytes(host, "eth0"), kTensorBytes / 4) << NetworkHosts::name(host);
  }
}

// Node 0's name resolves, on nid002, to an address nobody has: its
// workers could never reach rank 0's store. nid002's agent says so in one
// line before any worker starts (node 0's agent then hears it left).
TEST_F(AcrossHostsTest, AMasterAddrUnreachableFromAHostIsOneErrorBeforeAnyWorker) {
  hosts_.emplace(2);
  hosts_->resolveOn(2, "nid001", "10.10.0.99");
  masterAddr_ = NetworkHosts::managementAddress(1);  // the agents meet; MASTER_ADDR is nid001
  const int port = freePort();
  int first = startCommand(agent(0, port, "all_reduce.py"), path("node0.log"));
  CommandResult second = runCommand(agent(1, port, "all_reduce.py"));
  EXPECT_NE(waitCommand(first), 0);
  EXPECT_EQ(second.exitCode, 78) << second.err;
  EXPECT_EQ(second.out, "");
  EXPECT_THAT(second.err,
              ::testing::MatchesRegex(
                  "distrun: error: MASTER_ADDR nid001 \\(node 0's, where rank 0's store listens "
                  "on port [0-9]+\\) is 10\\.10\\.0\\.99 on nid002, which cannot reach it: No "
                  "route to host: its workers would not reach rank 0; make nid001 resolve to an "
                  "address every node reaches \\(/etc/hosts, DNS\\), or give node 0's agent "
                  "--local-addr ADDRESS\n"));
  EXPECT_THAT(log("node0.log"), HasSubstr("node 1 (nid002) was lost"));
}

// The store's host name resolves, on nid002, to an address nobody has: its
// agent's error names the address it tried.
TEST_F(AcrossHostsTest, AStoreUnreachableFromAHostIsNamedWithTheAddressTried) {
  hosts_.emplace(2);
  hosts_->resolveOn(2, "nid001", "10.10.0.99");
  joinTimeout_ = 5;
  const int port = freePort();
  int first = startCommand(agent(0, port, "all_reduce.py"), path("node0.log"));
  CommandResult second = runCommand(agent(1, port, "all_reduce.py"));
  EXPECT_NE(waitCommand(first), 0);
  EXPECT_NE(second.exitCode, 0);
  EXPECT_THAT(second.err, HasSubstr(fmt::format(
                              "distrun: error: cannot reach the rendezvous store at nid001:{} "
                              "(10.10.0.99 from here): ",
                              port)));
  EXPECT_THAT(log("node0.log"), HasSubstr("node(s) 1 of 2 did not join within 5 s"));
}

// nid002 is cut off mid-job: both agents end, none waits out a time-out,
// and nid001's report names the lost node.
TEST_F(AcrossHostsTest, AHostCutOffMidJobEndsBothAgentsNamingIt) {
  hosts_.emplace(2);
  const int port = freePort();
  int first = startCommand(agent(0, port, "steps.py 120 1"), path("node0.log"));
  int second = startCommand(agent(1, port, "steps.py 120 1"), path("node1.log"));
  ASSERT_TRUE(waitForLines(path("node1.log"), 2, 60)) << log("node1.log");
  const auto cutAt = std::chrono::steady_clock::now();
  hosts_->cut(2);
  EXPECT_NE(waitCommand(first), 0);
  EXPECT_NE(waitCommand(second), 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - cutAt).count();
  std::cerr << "both agents ended " << seconds << " s after the cut\n";
  EXPECT_THAT(log("node0.log"), HasSubstr("nid002"));
  EXPECT_THAT(log("node0.log"), Not(HasSubstr("step 119")));
  // nid002's agent names the store it lost once, with how it was lost.
  EXPECT_THAT(log("node1.log"),
              HasSubstr(fmt::format(
                  "distrun: error: node 1 lost the rendezvous store at nid001:{}: ", port)));
  EXPECT_THAT(log("node1.log"), HasSubstr("(did node 0's agent or its host die?)\n"));
}

// A job of fixed nodes on three hosts, nid003 split from the other two:
// no side trains on (a fixed job never re-forms), every agent ends, and
// nid001's report names nid003.
TEST_F(AcrossHostsTest, APartitionEndsAFixedJobOnBothSides) {
  hosts_.emplace(3);
  nodes_ = 3;
  const int port = freePort();
  std::vector<int> agents;
  for (int node = 0; node < 3; ++node) {
    agents.push_back(
        startCommand(agent(node, port, "steps.py 120 1"), path(fmt::format("node{}.log", node))));
  }
  for (int node = 0; node < 3; ++node) {
    ASSERT_TRUE(waitForLines(path(fmt::format("node{}.log", node)), 2, 60))
        << log(fmt::format("node{}.log", node));
  }
  hosts_->partition({3});
  for (int node = 0; node < 3; ++node) {
    EXPECT_NE(waitCommand(agents[static_cast<size_t>(node)]), 0)
        << log(fmt::format("node{}.log", node));
  }
  EXPECT_THAT(log("node0.log"), HasSubstr("node 2 (nid003) was lost"));
  for (int node = 0; node < 3; ++node) {
    EXPECT_THAT(log(fmt::format("node{}.log", node)), Not(HasSubstr("step 119")));
  }
}

class ElasticAcrossHostsTest : public AcrossHostsTest {
 protected:
  // `distrun run --nnodes NODES` on host `host`, the store at nid001.
  std::string elasticAgent(int host, int port, const std::string& nodes = "2:3") const {
    return hosts_->on(
        host, fmt::format("cd {} && DISTRUN_TOKEN=netns-test DISTRUN_SITE_PATH={} {} run --site "
                          "cluster --nnodes {} --rdzv-backend c10d --rdzv-endpoint nid001:{} "
                          "--rdzv-id netns --max-restarts 3 --rdzv-conf "
                          "last_call_timeout=1,join_timeout=20 --nproc-per-node 1 --python "
                          "/usr/bin/python3 steps.py 20 0.5",
                          quote(dir_), quote(path("sites")), distrun(), nodes, port));
  }
  // Three hosts of `--nnodes 1:3` training, then `side` split from the
  // others: the others finish in a world of two; every host of `side`
  // ends, fenced, without training alone.
  void expectOnlyTheMajorityTrainsOn(const std::vector<int>& side) {
    hosts_.emplace(3);
    const int port = freePort();
    std::vector<int> agents;
    for (int host = 1; host <= 3; ++host) {
      agents.push_back(
          startCommand(elasticAgent(host, port, "1:3"), path(fmt::format("host{}.log", host))));
      if (host == 1) ::usleep(300000);  // nid001 binds the endpoint: it hosts the store
    }
    for (int host = 1; host <= 3; ++host) {
      ASSERT_TRUE(waitForLines(path(fmt::format("host{}.log", host)), 2, 90))
          << log(fmt::format("host{}.log", host));
    }
    hosts_->partition(side);
    for (int host = 1; host <= 3; ++host) {
      const std::string name = fmt::format("host{}.log", host);
      const bool minority = std::count(side.begin(), side.end(), host) > 0;
      const int code = waitCommand(agents[static_cast<size_t>(host - 1)]);
      if (minority) {
        EXPECT_NE(code, 0) << log(name);
        EXPECT_THAT(log(name), Not(HasSubstr(" of 1 step"))) << "trained alone";
        EXPECT_THAT(log(name), ::testing::ContainsRegex("round [0-9]+ is fenced: 1 of the 3 nodes "
                                                        "of round 0 \\(nid00[0-9]\\) reach"))
            << log(name);
      } else {
        EXPECT_EQ(code, 0) << log(name);
        EXPECT_THAT(log(name), HasSubstr(" of 2 step 19\n"));
      }
    }
  }
};

// Three hosts train; nid003 is cut off: nid001 and nid002 re-form without
// it and finish in a world of two; nid003, alone, never trains on (it
// cannot gather the 2 nodes --nnodes 2:3 needs) and ends.
TEST_F(ElasticAcrossHostsTest, AHostCutOffLeavesTheOthersTrainingWithoutIt) {
  hosts_.emplace(3);
  const int port = freePort();
  std::vector<int> agents;
  for (int host = 1; host <= 3; ++host) {
    agents.push_back(startCommand(elasticAgent(host, port), path(fmt::format("host{}.log", host))));
    if (host == 1) ::usleep(300000);  // nid001 binds the endpoint: it hosts the store
  }
  for (int host = 1; host <= 3; ++host) {
    ASSERT_TRUE(waitForLines(path(fmt::format("host{}.log", host)), 2, 90))
        << log(fmt::format("host{}.log", host));
  }
  hosts_->cut(3);
  EXPECT_EQ(waitCommand(agents[0]), 0) << log("host1.log");
  EXPECT_EQ(waitCommand(agents[1]), 0) << log("host2.log");
  EXPECT_NE(waitCommand(agents[2]), 0) << log("host3.log");
  for (int host : {1, 2}) {
    EXPECT_THAT(log(fmt::format("host{}.log", host)), HasSubstr(" of 2 step 19\n"));
  }
  EXPECT_THAT(log("host3.log"), Not(HasSubstr(" of 1 step")));
  EXPECT_THAT(log("host3.log"),
              HasSubstr("distrun: error: only 1 of the 2 nodes needed (--nnodes 2:3) joined round "
                        "1 within 20 s (joined: nid003)"));
  EXPECT_THAT(log("host1.log"), HasSubstr("nid003"));
}

// distrun's own collectives (distrun-bench, Gloo) across two hosts whose
// fast links are capped at 1 Gbit/s: the site profile's hsn0 carries them.
TEST_F(AcrossHostsTest, DistrunsBenchRunsAcrossHostsOnTheFastLink) {
  hosts_.emplace(2);
  for (int host : {1, 2}) hosts_->capFastLink(host, 1000);
  const int port = freePort();
  const std::string bench =
      binaryPath("distrun-bench") + " all_reduce -b 4M -e 4M -n 5 -w 1 --backend gloo";
  int first = startCommand(agent(0, port, bench), path("node0.log"));
  CommandResult second = runCommand(agent(1, port, bench));
  ASSERT_EQ(waitCommand(first), 0) << log("node0.log");
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_THAT(log("node0.log") + second.out, ::testing::ContainsRegex("4194304 +1048576 +float"));
  for (int host : {1, 2}) {
    EXPECT_GE(hosts_->sentBytes(host, "hsn0"), 6 * (4u << 20)) << NetworkHosts::name(host);
    EXPECT_LT(hosts_->sentBytes(host, "eth0"), 1u << 20) << NetworkHosts::name(host);
  }
}

// A partition of an elastic job that could run on one node (--nnodes
// 1:3): the side with two of the three hosts trains on, the single host
// never does, whether it hosts the store or not (fencing: docs/launcher.md).
TEST_F(ElasticAcrossHostsTest, APartitionLeavesOnlyTheMajorityTrainingWhenTheStoreIsWithIt) {
  expectOnlyTheMajorityTrainsOn({3});
}

TEST_F(ElasticAcrossHostsTest, APartitionLeavesOnlyTheMajorityTrainingWhenTheStoreIsNot) {
  expectOnlyTheMajorityTrainsOn({1});
}

}  // namespace
}  // namespace distrun::testing
