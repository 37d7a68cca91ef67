#include "distrun/cluster/tasks_per_node.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::cluster {
namespace {

using ::testing::ElementsAre;

TEST(TasksPerNodeTest, ParsesRepeatsAndPlainCounts) {
  EXPECT_THAT(parseTasksPerNode("2(x3),1", "V"), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(parseTasksPerNode("16(x2)", "V"), ElementsAre(16, 16));
  EXPECT_THAT(parseTasksPerNode("12", "V"), ElementsAre(12));
  EXPECT_THAT(parseTasksPerNode("1,3,2", "V"), ElementsAre(1, 3, 2));
}

TEST(TasksPerNodeTest, MalformedValuesNameTheVariable) {
  for (const char* bad :
       {"", "2(x", "2(3)", "(x3)", "2(x0)", "2(xa)", "a", "2,,1", "2(x3)1", "-1"}) {
    try {
      parseTasksPerNode(bad, "SLURM_TASKS_PER_NODE");
      FAIL() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith(std::string("SLURM_TASKS_PER_NODE='") + bad +
                                                  "' is malformed at '"));
      EXPECT_THAT(e.what(), ::testing::EndsWith("expected counts like '2(x3),1'"));
    }
  }
}

}  // namespace
}  // namespace distrun::cluster
