#include "distrun/binding/node_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::binding {
namespace {

NodeTopology described(const std::vector<std::string>& lines) {
  NodeTopology t;
  t.source = "test";
  for (const std::string& line : lines) addTopologyLine(t, line, "f.site:1");
  return t;
}

TEST(NodeTopologyTest, ReadsEveryKindOfLine) {
  NodeTopology t = described({"cpus 0-7", "reserved-cpus 0,4", "numa 0 cpus 0-3", "numa 1 cpus 4-7",
                              "gpu 0 numa 1 cpus 4-7"});
  t.validate();
  EXPECT_EQ(t.cpus, (CpuList{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.usableCpus(), (CpuList{1, 2, 3, 5, 6, 7}));
  ASSERT_EQ(t.gpus.size(), 1u);
  EXPECT_EQ(t.gpus[0].numa, 1);
  EXPECT_EQ(t.numaOf({3, 4}), (std::vector<int>{0, 1}));
  EXPECT_EQ(t.numaOf({5}), (std::vector<int>{1}));
}

TEST(NodeTopologyTest, AMalformedLineNamesTheFileLineAndTheForms) {
  for (const char* bad : {"cpu 0-7", "gpu 0 cpus 1-2", "numa x cpus 0-1", "cpus", "gpu 0 numa 1"}) {
    NodeTopology t;
    try {
      addTopologyLine(t, bad, "lumi.site:12");
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_THAT(e.what(), ::testing::StartsWith("lumi.site:12: ")) << bad;
    }
  }
}

TEST(NodeTopologyTest, ValidateNamesThePartThatDisagrees) {
  auto message = [](const std::vector<std::string>& lines) {
    try {
      described(lines).validate();
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("valid");
  };
  EXPECT_EQ(message({"numa 0 cpus 0-3"}),
            "the node description from test: it lists no cpus (a 'node cpus LIST' line)");
  EXPECT_EQ(
      message({"cpus 0-3", "gpu 1 numa 0 cpus 0-1"}),
      "the node description from test: GPU 1 is on NUMA domain 0, which it does not describe");
  EXPECT_EQ(message({"cpus 0-3", "numa 0 cpus 0-7"}),
            "the node description from test: NUMA domain 0 has cpus the node lacks");
  EXPECT_EQ(message({"cpus 0-3", "reserved-cpus 9"}),
            "the node description from test: a reserved cpu is not among the node's cpus");
}

}  // namespace
}  // namespace distrun::binding
