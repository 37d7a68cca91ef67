// torchrun's GPU contract on the nodes users run on, from the flags and the
// environment a job inherits to each worker's environment and cores: for
// every worker, device LOCAL_RANK of the GPUs it sees exists, is the GPU
// the plan gives it, and its cores are that GPU's (LUMI-G's published
// masks, MareNostrum 5's 20 cores a GPU), on whole nodes and on half nodes
// with an inherited list, by default, mapped and with --virtual-local-rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/binding/cpu_list.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/strings.h"
#include "distrun/launch/run_options.h"
#include "distrun/launch/worker_setup.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::launch {
namespace {

using Inherited = std::map<std::string, std::string>;

binding::NodeTopology describedNode(const std::string& site) {
  cluster::SiteProfile profile =
      cluster::loadSiteProfile(site, {std::string(DISTRUN_SOURCE_DIR) + "/share/sites"});
  return profile.node.value();
}

// A job on `site`'s node that may use `cpus` and inherits `vars`.
struct DescribedJob {
  std::string site;
  std::vector<int> cpus;
  Inherited vars;
  RunOptions options;
};

DescribedJob describedJob(const std::string& site, int ranks, Inherited vars = {}) {
  // In a batch job: the site profiles' variables name the job and the node.
  vars.insert({{"SLURM_JOB_ID", "4242"}, {"SLURM_NODEID", "0"}, {"USER", "ana"}});
  DescribedJob j{site,
                 binding::parseCpuList(site == "lumi" ? "0-63" : "0-79", "test cpus"),
                 std::move(vars),
                 {}};
  j.options.site = site;
  j.options.nprocPerNode = std::to_string(ranks);
  j.options.program = {"train.py"};
  return j;
}

std::string variableIn(const std::vector<std::string>& environment, const std::string& name) {
  for (const std::string& entry : environment) {
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
  }
  return "";
}

// The GPU's cores on `node`, less the site's reserved ones and those the job
// may not use.
std::vector<int> coresOf(const binding::NodeTopology& node, const std::string& gpu,
                         const std::vector<int>& allowed) {
  for (const binding::NodeTopology::Gpu& g : node.gpus) {
    if (std::to_string(g.index) == gpu) {
      return binding::onlyWithin(binding::onlyWithin(g.cpus, node.usableCpus()), allowed);
    }
  }
  return {};
}

std::string everyGpuOf(const binding::NodeTopology& node) {
  std::vector<std::string> ids;
  for (const binding::NodeTopology::Gpu& g : node.gpus) ids.push_back(std::to_string(g.index));
  return join(ids, ",");
}

// Checks the contract for every worker of `j`; returns the GPU (node index)
// each local rank uses, in order.
std::vector<std::string> expectContract(const DescribedJob& j, const std::string& variable) {
  binding::NodeTopology node = describedNode(j.site);
  MapEnvironment env(j.vars);
  RunContext ctx{env,
                 HostFacts{"gpu01", 1},
                 j.cpus,
                 std::string(DISTRUN_SOURCE_DIR) + "/share/sites",
                 static_cast<int>(node.gpus.size()),
                 node};
  AgentConfig c = resolveAgentConfig(j.options, ctx);
  rdzv::World world{0, 1, c.layout.localWorldSize, 0, "gpu01", 29500};
  std::vector<std::string> used;
  for (int local = 0; local < c.layout.localWorldSize; ++local) {
    WorkerSpec w = workerSpec(c, world, 29500, local, env);
    // Unset: the worker sees what its agent saw, the inherited list or the node's GPUs.
    std::string list = variableIn(w.environment, variable);
    if (list.empty()) list = j.vars.count(variable) ? j.vars.at(variable) : everyGpuOf(node);
    std::vector<std::string> seen = split(list, ',');
    int localRank = std::stoi(variableIn(w.environment, "LOCAL_RANK"));
    SCOPED_TRACE(j.site + " local rank " + std::to_string(local) + " sees " + list);
    if (localRank >= static_cast<int>(seen.size())) {
      ADD_FAILURE() << "cuda:LOCAL_RANK does not exist";
      continue;
    }
    const std::string& gpu = seen[static_cast<size_t>(localRank)];
    EXPECT_EQ(gpu, c.gpuIds[static_cast<size_t>(c.plan[static_cast<size_t>(local)].device)])
        << "cuda:LOCAL_RANK is not the plan's GPU";
    EXPECT_EQ(w.cpus, coresOf(node, gpu, j.cpus)) << "the cores are not GPU " << gpu << "'s";
    EXPECT_EQ(variableIn(w.environment, "RANK"), std::to_string(local));
    used.push_back(gpu);
  }
  return used;
}

TEST(GpuContractTest, LumiWholeNodeGivesRankIGcdIWithItsPublishedCcd) {
  EXPECT_EQ(expectContract(describedJob("lumi", 8), "ROCR_VISIBLE_DEVICES"),
            (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
}

TEST(GpuContractTest, LumiHalfNodeKeepsTheInheritedGcdsAndTheirCcds) {
  DescribedJob half = describedJob("lumi", 4, {{"ROCR_VISIBLE_DEVICES", "4,5,6,7"}});
  half.cpus = binding::parseCpuList("0-15,32-47",
                                    "test cpus");  // the CCDs of GCDs 4-7, as Slurm gives them
  EXPECT_EQ(expectContract(half, "ROCR_VISIBLE_DEVICES"),
            (std::vector<std::string>{"4", "5", "6", "7"}));
}

TEST(GpuContractTest, LumiMappedGcdsAreSwappedToLocalRank) {
  DescribedJob mapped = describedJob("lumi", 8);
  mapped.options.gpuBind = "map:7,6,5,4,3,2,1,0";
  EXPECT_EQ(expectContract(mapped, "ROCR_VISIBLE_DEVICES"),
            (std::vector<std::string>{"7", "6", "5", "4", "3", "2", "1", "0"}));
}

TEST(GpuContractTest, LumiVirtualLocalRankShowsEachRankItsGcdAsDeviceZero) {
  DescribedJob narrowed = describedJob("lumi", 8);
  narrowed.options.virtualLocalRank = true;
  EXPECT_EQ(expectContract(narrowed, "ROCR_VISIBLE_DEVICES"),
            (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
}

TEST(GpuContractTest, MareNostrum5GivesEachH100ItsTwentyCores) {
  EXPECT_EQ(expectContract(describedJob("marenostrum5", 4), "CUDA_VISIBLE_DEVICES"),
            (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(GpuContractTest, MareNostrum5HalfNodeKeepsTheInheritedGpusInTheirOrder) {
  DescribedJob half = describedJob("marenostrum5", 2, {{"CUDA_VISIBLE_DEVICES", "3,2"}});
  half.cpus = binding::parseCpuList("40-79", "test cpus");
  EXPECT_EQ(expectContract(half, "CUDA_VISIBLE_DEVICES"), (std::vector<std::string>{"3", "2"}));
}

}  // namespace
}  // namespace distrun::launch
