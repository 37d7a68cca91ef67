#include "distrun/cluster/site_profile.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::cluster {
namespace {

namespace fs = std::filesystem;

TEST(SiteProfileTest, ParsesEveryKeyword) {
  SiteProfile p = parseSiteProfile(
      "# comment\n\ndescription = Test site\n"
      "match SLURM_CLUSTER_NAME = lumi*\n"
      "set NCCL_SOCKET_IFNAME = hsn0,hsn1\n"
      "node-dir CACHE\n"
      "bind /opt/cray\n"
      "bind /etc/site.conf:/etc/site.conf:ro\n",
      "t", "t.site");
  EXPECT_EQ(p.description, "Test site");
  ASSERT_EQ(p.matches.size(), 1u);
  EXPECT_EQ(p.matches[0].pattern, "lumi*");
  ASSERT_EQ(p.settings.size(), 1u);
  EXPECT_EQ(p.settings[0].value, "hsn0,hsn1");
  EXPECT_THAT(p.nodeDirs, ::testing::ElementsAre("CACHE"));
  EXPECT_THAT(p.binds, ::testing::ElementsAre("/opt/cray", "/etc/site.conf:/etc/site.conf:ro"));
  EXPECT_TRUE(p.appliesTo(MapEnvironment({{"SLURM_CLUSTER_NAME", "lumi-g"}})));
  EXPECT_FALSE(p.appliesTo(MapEnvironment({{"SLURM_CLUSTER_NAME", "mn5"}})));
  EXPECT_FALSE(p.appliesTo(MapEnvironment()));
}

// What ${USER} and ${SLURM_NODEID} stand for where the environment lacks
// them: the user database's name for this process's user, the node rank.
TEST(SiteProfileTest, FallbacksAreTheLoginNameAndTheNodeRank) {
  const struct passwd* user = ::getpwuid(::geteuid());
  const std::string name = user ? user->pw_name : "uid" + std::to_string(::geteuid());
  EXPECT_EQ(loginName(), name);
  const MapEnvironment fallbacks = siteFallbacks(3, "4242");
  EXPECT_EQ(fallbacks.get("USER"), name);
  EXPECT_EQ(fallbacks.get("SLURM_NODEID"), "3");
  EXPECT_EQ(fallbacks.get("SLURM_JOB_ID"), "4242");
  EXPECT_EQ(fallbacks.vars().size(), 3u);
  EXPECT_EQ(siteFallbacks(0, "").get("SLURM_JOB_ID"), "nojob");  // outside a job
}

TEST(SiteProfileTest, ErrorsNameFileAndLine) {
  auto error = [](const std::string& text) {
    try {
      parseSiteProfile(text, "x", "x.site");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("set A\n"), "site profile x.site:1: expected 'NAME = value'");
  EXPECT_EQ(error("\nexport A=1\n"),
            "site profile x.site:2: expected description, match, set, node-dir, node, "
            "submit, gpu-visibility or bind, found 'export'");
  EXPECT_EQ(error("bind opt/cray\n"),
            "site profile x.site:1: expected 'bind /HOST/PATH[:/PATH/INSIDE[:ro]]'");
  EXPECT_EQ(error("gpu-visibility ROCR_VISIBLE_DEVICES\n"),
            "site profile x.site:1: expected 'gpu-visibility = VARIABLE' (CUDA_VISIBLE_DEVICES, "
            "ROCR_VISIBLE_DEVICES)");
  EXPECT_EQ(error("submit partiton = gpu\n"),
            "site profile x.site:1: 'submit partiton': expected one of partition, account, qos, "
            "time, gpus-per-node (did you mean partition?)");
  EXPECT_EQ(error("set A B = 1"),
            "site profile x.site:1: expected one variable name before '=', "
            "found 'A B'");
  EXPECT_EQ(error("node-dir"), "site profile x.site:1: expected 'node-dir VARIABLE'");
  EXPECT_THAT(error("\nnode cpus 0-7\nnode gpu 0 cpus 0-3\n"),
              ::testing::StartsWith("site profile x.site:3: 'node gpu 0 cpus 0-3': expected"));
  EXPECT_EQ(error("node cpus 0-7\nnode numa 0 cpus 0-15\n"),
            "the node description from the site profile x.site: NUMA domain 0 has cpus the node "
            "lacks");
}

TEST(SiteProfileTest, NodeLinesDescribeTheNodeType) {
  SiteProfile p = parseSiteProfile(
      "node cpus 0-3\nnode numa 0 cpus 0-3\nnode gpu 0 numa 0 cpus 2-3\n", "x", "x.site");
  ASSERT_TRUE(p.node.has_value());
  EXPECT_EQ(p.node->source, "the site profile x.site");
  EXPECT_EQ(p.node->gpus.size(), 1u);
  EXPECT_FALSE(parseSiteProfile("set A = 1\n", "x", "x.site").node.has_value());
  EXPECT_EQ(
      parseSiteProfile("submit partition = gpu\n", "x", "x.site").submitDefaults.at("partition"),
      "gpu");
}

class SiteDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("sites_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write("generic", "description = g\n");
    write("alpha", "match CLUSTER = alpha\nset A = 1\n");
    write("beta", "match CLUSTER = b*\nmatch PARTITION = gpu\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / (name + ".site")) << text;
  }
  std::vector<std::string> path() const { return {dir_.string()}; }
  fs::path dir_;
};

TEST_F(SiteDirectoryTest, DetectsByMatchLinesElseGeneric) {
  MapEnvironment env({{"CLUSTER", "beta"}, {"PARTITION", "gpu"}});
  EXPECT_EQ(selectSiteProfile(std::nullopt, env, path())->name, "beta");
  env.set("PARTITION", "cpu");
  EXPECT_EQ(selectSiteProfile(std::nullopt, env, path())->name, "generic");
  env.set("CLUSTER", "alpha");
  EXPECT_EQ(selectSiteProfile(std::nullopt, env, path())->name, "alpha");
}

TEST_F(SiteDirectoryTest, RequestedByFlagOrVariable) {
  MapEnvironment env({{"DISTRUN_SITE", "alpha"}});
  EXPECT_EQ(selectSiteProfile(std::nullopt, env, path())->name, "alpha");
  EXPECT_EQ(selectSiteProfile(std::string("beta"), env, path())->name, "beta");
  EXPECT_FALSE(selectSiteProfile(std::string("none"), env, path()).has_value());
}

TEST_F(SiteDirectoryTest, UnknownNameListsTheKnownOnes) {
  try {
    selectSiteProfile(std::string("lumi"), MapEnvironment(), path());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "site profile 'lumi' not found in " + dir_.string() +
                                         ": expected one of alpha, beta, generic (or none)");
  }
}

TEST_F(SiteDirectoryTest, SitePathComesFirst) {
  fs::path other = dir_ / "user";
  fs::create_directories(other);
  std::ofstream(other / "alpha.site") << "set A = 2\n";
  MapEnvironment env({{"DISTRUN_SITE_PATH", other.string()}});
  std::vector<std::string> search = siteSearchPath(env, dir_.string());
  EXPECT_EQ(search.size(), 2u);
  SiteProfile p = loadSiteProfile("alpha", search);
  EXPECT_EQ(p.settings.at(0).value, "2");
}

TEST(ShippedProfilesTest, EveryShippedProfileParses) {
  std::vector<std::string> path = {std::string(DISTRUN_SOURCE_DIR) + "/share/sites"};
  std::vector<std::string> names = listSiteProfiles(path);
  EXPECT_THAT(names, ::testing::IsSupersetOf({"generic", "lumi", "marenostrum5"}));
  for (const std::string& name : names) loadSiteProfile(name, path);
  MapEnvironment lumi({{"SLURM_CLUSTER_NAME", "lumi"}});
  EXPECT_EQ(selectSiteProfile(std::nullopt, lumi, path)->name, "lumi");
  EXPECT_EQ(loadSiteProfile("lumi", path).gpuVisibility, "ROCR_VISIBLE_DEVICES");
  EXPECT_EQ(loadSiteProfile("marenostrum5", path).gpuVisibility, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(loadSiteProfile("generic", path).gpuVisibility, "") << "CUDA_VISIBLE_DEVICES then";
  EXPECT_THAT(loadSiteProfile("lumi", path).binds,
              ::testing::IsSupersetOf({"/var/spool/slurmd", "/opt/cray"}));
}

}  // namespace
}  // namespace distrun::cluster
