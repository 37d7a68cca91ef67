#include "distrun/cluster/leftovers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace distrun::cluster {
namespace {

using ::testing::ElementsAre;
using Vars = std::map<std::string, std::string>;

// A shell after `eval "$(distrun env)"` printed RANK=0, WORLD_SIZE=1 and
// OMP_NUM_THREADS=2, with `changes` made since.
MapEnvironment evaluated(const Vars& changes = {}) {
  MapEnvironment env({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"OMP_NUM_THREADS", "2"}});
  env.set(kEnvMarker, envMarker({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"OMP_NUM_THREADS", "2"}}));
  env.set("HOME", "/home/me");
  for (const auto& [name, value] : changes) env.set(name, value);
  return env;
}

TEST(LeftoversTest, MarkerListsEachNameWithAFingerprintOfItsValue) {
  const std::string marker = envMarker({{"RANK", "0"}, {"OMP_NUM_THREADS", "2"}});
  EXPECT_THAT(marker, ::testing::MatchesRegex("RANK:[0-9a-f]{8},OMP_NUM_THREADS:[0-9a-f]{8}"));
  EXPECT_NE(envMarker({{"RANK", "0"}}), envMarker({{"RANK", "1"}}));
  EXPECT_EQ(envMarker({}), "");
}

TEST(LeftoversTest, UnchangedValuesAreLeftovers) {
  EXPECT_THAT(leftoverVariables(evaluated()), ElementsAre("RANK", "WORLD_SIZE", "OMP_NUM_THREADS"));
}

TEST(LeftoversTest, AValueChangedSinceTheEvalIsTheUsers) {
  EXPECT_THAT(leftoverVariables(evaluated({{"OMP_NUM_THREADS", "3"}})),
              ElementsAre("RANK", "WORLD_SIZE"));
}

TEST(LeftoversTest, AnUnsetVariableIsNoLeftover) {
  MapEnvironment env = evaluated();
  env.unset("RANK");
  EXPECT_THAT(leftoverVariables(env), ElementsAre("WORLD_SIZE", "OMP_NUM_THREADS"));
}

TEST(LeftoversTest, WithoutAMarkerNothingIsLeftOver) {
  MapEnvironment env = evaluated();
  env.unset(kEnvMarker);
  EXPECT_TRUE(leftoverVariables(env).empty());
  EXPECT_EQ(withoutLeftovers(env).vars(), env.vars());
}

TEST(LeftoversTest, GarbledMarkerEntriesAreSkipped) {
  MapEnvironment env = evaluated();
  env.set(kEnvMarker, "RANK,:12,WORLD_SIZE:zz," + envMarker({{"OMP_NUM_THREADS", "2"}}));
  EXPECT_THAT(leftoverVariables(env), ElementsAre("OMP_NUM_THREADS"));
}

TEST(LeftoversTest, WithoutLeftoversDropsThemAndTheMarkerAndKeepsTheRest) {
  const MapEnvironment clean = withoutLeftovers(evaluated({{"OMP_NUM_THREADS", "3"}}));
  EXPECT_EQ(clean.vars(), (Vars{{"HOME", "/home/me"}, {"OMP_NUM_THREADS", "3"}}));
  const UserEnvironment user(evaluated());
  EXPECT_THAT(user.leftovers, ElementsAre("RANK", "WORLD_SIZE", "OMP_NUM_THREADS"));
  EXPECT_EQ(user.env.vars(), (Vars{{"HOME", "/home/me"}}));
}

TEST(LeftoversTest, NoteNamesTheVariablesAndTheMarker) {
  EXPECT_EQ(leftoversNote({"RANK", "WORLD_SIZE"}),
            "ignoring RANK WORLD_SIZE: left by an earlier eval \"$(distrun env)\" "
            "(DISTRUN_ENV_SET lists them with these values)");
}

TEST(LeftoversTest, UnsetListsPlacementVariablesSetThenLeftoversAndTheMarker) {
  MapEnvironment env = evaluated();
  env.set("SLURM_PROCID", "1");
  env.set("OMPI_MCA_btl", "^openib");  // a setting, not a placement
  EXPECT_THAT(placementVariablesSet(env),
              ElementsAre("RANK", "WORLD_SIZE", "SLURM_PROCID", "OMP_NUM_THREADS", kEnvMarker));
  EXPECT_TRUE(placementVariablesSet(MapEnvironment{{"HOME", "/"}}).empty());
}

}  // namespace
}  // namespace distrun::cluster
