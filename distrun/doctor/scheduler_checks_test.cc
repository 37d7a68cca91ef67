#include "distrun/doctor/scheduler_checks.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/leftovers.h"
#include "distrun/common/unique_fd.h"
#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

namespace fs = std::filesystem;

// A probe's context with the layout detected from `env`, as the probe makes it.
ProbeContext contextFor(const MapEnvironment& env, const std::string& hostname = "n1") {
  ProbeContext ctx;
  ctx.env = env;
  ctx.host = {hostname, 4};
  ctx.node = hostname;
  ctx.layout = cluster::detectJobLayout(env, ctx.host);
  return ctx;
}

// Task 0 of step 12.0 on nodes n1, n2, n3, one task each.
MapEnvironment stepEnv() {
  return {{"SLURM_JOB_ID", "12"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", "0"},
          {"SLURM_NODEID", "0"},
          {"SLURM_LOCALID", "0"},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_STEP_NUM_NODES", "3"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
          {"SLURM_STEP_NODELIST", "n[1-3]"},
          {"SLURMD_NODENAME", "n1"}};
}

// The batch script of job 12 on n1, n2, n3.
MapEnvironment batchEnv() {
  return {{"SLURM_JOB_ID", "12"},       {"SLURM_PROCID", "0"},
          {"SLURM_NTASKS", "6"},        {"SLURM_TASKS_PER_NODE", "2(x3)"},
          {"SLURM_JOB_NUM_NODES", "3"}, {"SLURM_JOB_NODELIST", "n[1-3]"},
          {"SLURMD_NODENAME", "n1"}};
}

constexpr const char* kViewFix =
    "if left from an earlier shell or job, clear them: eval \"$(distrun env --unset)\"; or "
    "start doctor as the step's tasks: srun distrun doctor";

// --- scheduler ---

TEST(SchedulerCheckTest, AStandaloneNodeIsAloneAndFine) {
  CheckResult r = checkScheduler(contextFor({}));
  EXPECT_EQ(r.check, "scheduler");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "not under a scheduler: this node alone");
  EXPECT_EQ(r.facts.at("scheduler"), "standalone");
  EXPECT_EQ(r.values.at("nodes"), 1);
}

TEST(SchedulerCheckTest, AWorldDescribedByHandIsTakenAsGiven) {
  CheckResult r = checkScheduler(contextFor({{"RANK", "1"}, {"WORLD_SIZE", "4"}}));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "not under a scheduler (RANK, WORLD_SIZE): 1 node, rank 1 of 4");
}

TEST(SchedulerCheckTest, AConsistentSlurmStepSaysWhereThisTaskSits) {
  CheckResult r = checkScheduler(contextFor(stepEnv()));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "slurm step 12.0: 3 nodes, 1 task per node, rank 0 of 3");
  EXPECT_EQ(r.facts.at("scheduler"), "slurm");
  EXPECT_EQ(r.values.at("nodes"), 3);
  EXPECT_EQ(r.values.at("tasks"), 3);
}

TEST(SchedulerCheckTest, UnevenTasksPerNodeAreShownAsSlurmWritesThem) {
  MapEnvironment env = stepEnv();
  env.set("SLURM_STEP_NUM_TASKS", "5");
  env.set("SLURM_STEP_TASKS_PER_NODE", "2(x2),1");
  EXPECT_EQ(checkScheduler(contextFor(env)).detail,
            "slurm step 12.0: 3 nodes, tasks per node 2(x2),1, rank 0 of 5");
}

TEST(SchedulerCheckTest, AVariableTheLayoutCouldNotBeReadFromFails) {
  ProbeContext ctx = contextFor({});
  ctx.layoutError =
      std::string("SLURM_PROCID=3 is not below SLURM_NTASKS=2") + cluster::kClearStaleHint;
  CheckResult r = checkScheduler(ctx);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "SLURM_PROCID=3 is not below SLURM_NTASKS=2");
  EXPECT_EQ(r.fix, kViewFix);
}

TEST(SchedulerCheckTest, ABatchScriptIsThisNodeAlone) {
  CheckResult r = checkScheduler(contextFor(batchEnv()));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "slurm job 12, batch script outside a job step: this node alone");
}

TEST(SchedulerCheckTest, TaskCountsThatDoNotAddUpFail) {
  MapEnvironment env = batchEnv();
  env.set("SLURM_NTASKS", "8");
  CheckResult r = checkScheduler(contextFor(env));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "SLURM_TASKS_PER_NODE=2(x3) adds up to 6 tasks but SLURM_NTASKS=8");
  EXPECT_EQ(r.fix, kViewFix);
}

TEST(SchedulerCheckTest, ANodeListOfTheWrongLengthFails) {
  MapEnvironment env = batchEnv();
  env.set("SLURM_JOB_NUM_NODES", "4");
  EXPECT_EQ(checkScheduler(contextFor(env)).detail,
            "SLURM_JOB_NODELIST=n[1-3] names 3 hosts but SLURM_JOB_NUM_NODES=4");
  env.set("SLURM_JOB_NODELIST", "n[1-4]");
  EXPECT_EQ(checkScheduler(contextFor(env)).detail,
            "SLURM_TASKS_PER_NODE=2(x3) counts tasks on 3 nodes but SLURM_JOB_NUM_NODES=4");
}

TEST(SchedulerCheckTest, AMalformedVariableFailsWithTheParsersWords) {
  MapEnvironment env = batchEnv();
  env.set("SLURM_TASKS_PER_NODE", "2(x");
  CheckResult r = checkScheduler(contextFor(env));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "SLURM_TASKS_PER_NODE='2(x' is malformed at '2(x': expected counts like '2(x3),1'");
}

TEST(SchedulerCheckTest, AHostNameThatIsNotInTheNodeListFails) {
  MapEnvironment env = stepEnv();
  env.unset("SLURMD_NODENAME");
  CheckResult r = checkScheduler(contextFor(env, "login7"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "the host name is not in SLURM_STEP_NODELIST=n[1-3]");
}

TEST(SchedulerCheckTest, AHostNameAtAnotherPlaceThanSlurmNodeIdFails) {
  MapEnvironment env = stepEnv();
  env.unset("SLURMD_NODENAME");
  CheckResult r = checkScheduler(contextFor(env, "n2"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "SLURM_NODEID=0 but the host name is node 1 of SLURM_STEP_NODELIST");
}

TEST(SchedulerCheckTest, AFullyQualifiedHostNameMatchesItsNodeName) {
  MapEnvironment env = stepEnv();
  env.unset("SLURMD_NODENAME");
  EXPECT_EQ(checkScheduler(contextFor(env, "n1.cluster.example.org")).state, CheckState::kOk);
}

TEST(SchedulerCheckTest, AnotherSchedulerSaysItsCounts) {
  ProbeContext ctx = contextFor({});
  ctx.layout.scheduler = cluster::Scheduler::kPbs;
  ctx.layout.jobId = "77.pbs";
  ctx.layout.numNodes = 2;
  ctx.layout.worldSize = 8;
  ctx.layout.rank = 4;
  EXPECT_EQ(checkScheduler(ctx).detail, "pbs job 77.pbs: 2 nodes, rank 4 of 8");
}

// --- hostnames ---

Resolver knowing(std::set<std::string> known) {
  return [known](const std::string& name) { return known.count(name) > 0; };
}

ProbeContext threeNodes() {
  ProbeContext ctx = contextFor(stepEnv());
  ctx.env.set("MASTER_ADDR", "n1");
  return ctx;
}

constexpr std::chrono::minutes kNoHurry{1};

TEST(HostnamesCheckTest, EveryNameOfTheJobResolves) {
  CheckResult r = checkHostnamesWith(threeNodes(), knowing({"n1", "n2", "n3"}), kNoHurry);
  EXPECT_EQ(r.check, "hostnames");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "all 3 names of the job resolve here");  // MASTER_ADDR is n1
  EXPECT_EQ(r.values.at("names"), 3);
}

TEST(HostnamesCheckTest, AnUnresolvedMasterAddrIsNamedAsSuch) {
  ProbeContext ctx = threeNodes();
  ctx.env.set("MASTER_ADDR", "head.example");
  CheckResult r = checkHostnamesWith(ctx, knowing({"n1", "n2", "n3"}), kNoHurry);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "1 of 4 names do not resolve here: head.example (MASTER_ADDR)");
  EXPECT_EQ(r.fix,
            "add them to /etc/hosts or DNS, or use the names this site resolves (its node "
            "names, MASTER_ADDR)");
}

TEST(HostnamesCheckTest, AThousandNodesWithAFewUnresolvedListsTheFirstFew) {
  MapEnvironment env = stepEnv();
  env.set("SLURM_STEP_NUM_TASKS", "1000");
  env.set("SLURM_STEP_NUM_NODES", "1000");
  env.set("SLURM_STEP_TASKS_PER_NODE", "1(x1000)");
  env.set("SLURM_STEP_NODELIST", "n[0001-1000]");
  env.set("SLURMD_NODENAME", "n0001");
  std::set<std::string> known;
  for (int i = 1; i <= 1000; ++i) {
    if (i % 100 != 7) known.insert(fmt::format("n{:04}", i));
  }
  CheckResult r = checkHostnamesWith(contextFor(env, "n0001"), knowing(known), kNoHurry);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "10 of 1000 names do not resolve here: n0007, n0107, n0207, n0307, n0407 and 5 "
            "more");
  EXPECT_EQ(r.values.at("unresolved_names"), 10);
}

TEST(HostnamesCheckTest, SlowLookupsStopAtTheBudgetAndWarn) {
  CheckResult r =
      checkHostnamesWith(threeNodes(), knowing({"n1", "n2", "n3"}), std::chrono::milliseconds(0));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "name lookups are slow here: 1 of 3 names resolved before the time limit, the rest "
            "not tried");
  EXPECT_EQ(r.fix,
            "a slow or unreachable name server (/etc/resolv.conf): ask the admins, or list the "
            "nodes in /etc/hosts");
}

TEST(HostnamesCheckTest, AFailureFoundBeforeTheBudgetRanOutIsStillAFailure) {
  CheckResult r =
      checkHostnamesWith(threeNodes(), knowing({"n2", "n3"}), std::chrono::milliseconds(0));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "1 of 3 names do not resolve here: n1 (MASTER_ADDR) (1 of 3 tried in time)");
}

TEST(HostnamesCheckTest, OneNodeWithoutMasterAddrHasNoNamesToResolve) {
  CheckResult r = checkHostnamesWith(contextFor({}), knowing({}), kNoHurry);
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "one node and no MASTER_ADDR: no names to resolve");
}

TEST(HostnamesCheckTest, TheRealResolverFindsLocalhost) {
  EXPECT_TRUE(resolvesHere("localhost"));
  EXPECT_TRUE(resolvesHere("127.0.0.1"));
  ProbeContext ctx = contextFor({{"MASTER_ADDR", "127.0.0.1"}});
  ctx.layout.hosts = {"localhost", "127.0.0.1"};
  EXPECT_EQ(checkHostnames(ctx).state, CheckState::kOk);
}

// --- master-port ---

// A socket listening on a free port of all IPv4 addresses.
struct Listener {
  UniqueFd fd;
  int port = 0;
};

Listener listenOnAFreePort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(::listen(fd.get(), 1), 0);
  socklen_t size = sizeof(address);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size);
  return {std::move(fd), ntohs(address.sin_port)};
}

ProbeContext masterWithPort(const std::string& port) {
  return contextFor({{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}});
}

std::string ownCommand() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(MasterPortCheckTest, AFreePortIsFine) {
  Listener probe = listenOnAFreePort();
  const int port = probe.port;
  probe.fd.reset();
  CheckResult r = checkMasterPort(masterWithPort(std::to_string(port)));
  EXPECT_EQ(r.check, "master-port");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "MASTER_PORT " + std::to_string(port) + " is free");
  EXPECT_EQ(r.facts.at("master_port"), std::to_string(port));
}

TEST(MasterPortCheckTest, APortAnotherProcessListensOnFailsNamingIt) {
  Listener listener = listenOnAFreePort();
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    ::pause();  // holds the inherited socket until killed
    ::_exit(0);
  }
  listener.fd.reset();  // now only the other process holds it
  CheckResult r = checkMasterPort(masterWithPort(std::to_string(listener.port)));
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, fmt::format("MASTER_PORT {} is taken on this node (by pid {}, {})",
                                  listener.port, holder, ownCommand()));
  EXPECT_EQ(r.fix, "stop that process, or let distrun derive a free port: unset MASTER_PORT");
}

TEST(MasterPortCheckTest, APortThisDoctorHoldsIsFreeForTheTraining) {
  Listener listener = listenOnAFreePort();
  CheckResult r = checkMasterPort(masterWithPort(std::to_string(listener.port)));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, fmt::format("MASTER_PORT {} is held by this doctor itself, free for the "
                                  "training",
                                  listener.port));
}

TEST(MasterPortCheckTest, AHolderThatCannotBeSeenIsNotNamed) {
  Listener listener = listenOnAFreePort();
  const std::string emptyProc = ::testing::TempDir() + "/empty-proc";
  fs::create_directories(emptyProc);
  CheckResult r = checkMasterPortWith(masterWithPort(std::to_string(listener.port)), emptyProc);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, fmt::format("MASTER_PORT {} is taken on this node", listener.port));
  EXPECT_EQ(r.fix, fmt::format("find its holder (ss -ltnp 'sport = :{}'), or let distrun derive "
                               "a free port: unset MASTER_PORT",
                               listener.port));
}

TEST(MasterPortCheckTest, AMalformedPortFails) {
  for (const char* text : {"abc", "0", "70000", "-1"}) {
    CheckResult r = checkMasterPort(masterWithPort(text));
    EXPECT_EQ(r.state, CheckState::kFail) << text;
    EXPECT_EQ(r.detail, fmt::format("MASTER_PORT='{}' is not a port (1-65535)", text));
    EXPECT_EQ(r.fix,
              "export MASTER_PORT=29500 (a free port), or let distrun derive a free port: unset "
              "MASTER_PORT");
  }
}

TEST(MasterPortCheckTest, IsCheckedOnTheMasterNodeOnly) {
  MapEnvironment env = stepEnv();
  env.set("SLURM_PROCID", "1");
  env.set("SLURM_NODEID", "1");
  env.set("SLURMD_NODENAME", "n2");
  env.set("MASTER_PORT", "1");
  CheckResult r = checkMasterPort(contextFor(env, "n2"));
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "checked on the master node, n1");
}

TEST(MasterPortCheckTest, AnUnsetPortIsDerivedLater) {
  CheckResult r = checkMasterPort(contextFor({}));
  EXPECT_EQ(r.state, CheckState::kSkip);
  EXPECT_EQ(r.detail, "MASTER_PORT is not set: distrun derives a free one for the job");
}

// A /proc with one process holding one socket on port 30000 (0x7530). The
// folder is this process's own: the sanitizer trees run the same test at once.
std::string fakeProc(const std::string& table, const std::string& state) {
  const std::string root =
      ::testing::TempDir() + "/fake-proc-" + std::to_string(::getpid()) + "-" + table + state;
  fs::remove_all(root);
  fs::create_directories(root + "/net");
  fs::create_directories(root + "/4242/fd");
  const std::string header =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n";
  const std::string address = table == "tcp6" ? "00000000000000000000000000000000" : "00000000";
  std::ofstream(root + "/net/" + table)
      << header << "   0: " << address << ":7530 " << address << ":0000 " << state
      << " 00000000:00000000 00:00000000 00000000  1000        0 555 1 0 100 0 0 10 0\n"
      << "   1: " << address << ":1F90 " << address << ":0000 0A"
      << " 00000000:00000000 00:00000000 00000000  1000        0 556 1 0 100 0 0 10 0\n";
  std::ofstream(root + "/net/" + std::string(table == "tcp6" ? "tcp" : "tcp6")) << header;
  fs::create_symlink("socket:[555]", root + "/4242/fd/7");
  fs::create_symlink("/dev/null", root + "/4242/fd/0");
  std::ofstream(root + "/4242/comm") << "python3\n";
  return root;
}

TEST(PortHolderTest, FindsTheProcessWhoseSocketIsOnThePort) {
  for (const char* table : {"tcp", "tcp6"}) {
    std::optional<PortHolder> holder = findPortHolder(30000, fakeProc(table, "0A"));
    ASSERT_TRUE(holder) << table;
    EXPECT_EQ(holder->pid, 4242);
    EXPECT_EQ(holder->name, "python3");
  }
  EXPECT_TRUE(findPortHolder(30000, fakeProc("tcp", "01")));  // a connection on it
}

TEST(PortHolderTest, NothingOnThePortOrNoOwnerSeenIsNone) {
  const std::string root = fakeProc("tcp", "0A");
  EXPECT_FALSE(findPortHolder(30001, root));
  EXPECT_FALSE(findPortHolder(8080, root));  // socket 556 has no process that shows it
  EXPECT_FALSE(findPortHolder(30000, root + "/no-such-folder"));
}

}  // namespace
}  // namespace distrun::doctor
