#include "distrun/cluster/hostlist.h"

#include <cctype>
#include <ostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"

namespace distrun::cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Hosts = std::vector<std::string>;

struct Vector {
  std::string list;
  Hosts hosts;
};

// Every vector of reference/launchers.md §6.3, checked there against
// `scontrol show hostnames` (slurm-wlm 22.05.8), plus the suffix form that
// Slurm >= 23.02.5 accepts.
const std::vector<Vector> kScontrolVectors = {
    {"nid[005252-005254,005256],gpu-[01-03]",
     {"nid005252", "nid005253", "nid005254", "nid005256", "gpu-01", "gpu-02", "gpu-03"}},
    {"node[8-10]", {"node8", "node9", "node10"}},
    {"node[08-10]", {"node08", "node09", "node10"}},
    {"b04-[09-10]", {"b04-09", "b04-10"}},
    {"node[9-010]", {"node9", "node10"}},
    {"n[007-9]", {"n007", "n008", "n009"}},
    {"rack[1-2]_node[01-02]", {"rack1_node01", "rack1_node02", "rack2_node01", "rack2_node02"}},
    {"a[0-1]b[1-2]c[3-4]",
     {"a0b1c3", "a0b1c4", "a1b1c3", "a1b1c4", "a0b2c3", "a0b2c4", "a1b2c3", "a1b2c4"}},
    {"linux[1,2]", {"linux1", "linux2"}},
    {"alpha,beta,gamma", {"alpha", "beta", "gamma"}},
    {"nodeA,nodeB[001,003],nodeC", {"nodeA", "nodeB001", "nodeB003", "nodeC"}},
    {"n[1-2] m[3-4]", {"n1", "n2", "m3", "m4"}},
    {"n[3,1,2]", {"n3", "n1", "n2"}},
    {"n[1-3],n2", {"n1", "n2", "n3", "n2"}},
    {"node-[001-002],node-[005]", {"node-001", "node-002", "node-005"}},
    {"node[1-3]-ib", {"node1-ib", "node2-ib", "node3-ib"}},
};

void PrintTo(const Vector& v, std::ostream* os) { *os << "'" << v.list << "'"; }

// Test names: the list's letters and digits, e.g. node_08_10_ for node[08-10].
template <typename Param>
std::string listName(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::to_string(info.index) + "_";
  for (char c : info.param.list) {
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return name;
}

class ScontrolVectorTest : public ::testing::TestWithParam<Vector> {};

TEST_P(ScontrolVectorTest, ExpandsAsScontrolDoes) {
  EXPECT_EQ(expandHostlist(GetParam().list), GetParam().hosts);
}

INSTANTIATE_TEST_SUITE_P(Reference, ScontrolVectorTest, ::testing::ValuesIn(kScontrolVectors),
                         listName<Vector>);

TEST(HostlistTest, SeparatorsAndEmptyTokens) {
  EXPECT_THAT(expandHostlist("a\tb\nc,,d , e,"), ElementsAre("a", "b", "c", "d", "e"));
  EXPECT_TRUE(expandHostlist("").empty());
  EXPECT_TRUE(expandHostlist(" ,\t").empty());
}

TEST(HostlistTest, BracketsWithoutPrefixAndAdjacentGroups) {
  EXPECT_THAT(expandHostlist("[1-2][3-4]"), ElementsAre("13", "14", "23", "24"));
  EXPECT_THAT(expandHostlist("a[1-2][3-4]"), ElementsAre("a13", "a14", "a23", "a24"));
  EXPECT_THAT(expandHostlist("a-[1-2]-b-[3-4]"),
              ElementsAre("a-1-b-3", "a-1-b-4", "a-2-b-3", "a-2-b-4"));
}

TEST(HostlistTest, FourGroupsFollowSlurmOrder) {
  // Last group fastest, then the first, second, third (slowest).
  Hosts hosts = expandHostlist("a[0-1]b[0-1]c[0-1]d[0-1]");
  ASSERT_EQ(hosts.size(), 16u);
  EXPECT_THAT(Hosts(hosts.begin(), hosts.begin() + 5),
              ElementsAre("a0b0c0d0", "a0b0c0d1", "a1b0c0d0", "a1b0c0d1", "a0b1c0d0"));
  EXPECT_EQ(hosts[8], "a0b0c1d0");
}

TEST(HostlistTest, WidthComesFromEachLowBound) {
  EXPECT_THAT(expandHostlist("a[01-3],a[1-03]"),
              ElementsAre("a01", "a02", "a03", "a1", "a2", "a3"));
  EXPECT_THAT(expandHostlist("a[5-5]"), ElementsAre("a5"));
  EXPECT_THAT(expandHostlist("a[0001-3]"), ElementsAre("a0001", "a0002", "a0003"));
}

TEST(HostlistTest, LargeNumbersAndFullRange) {
  EXPECT_THAT(expandHostlist("a[4294967295-4294967296]"),
              ElementsAre("a4294967295", "a4294967296"));
  EXPECT_THAT(expandHostlist("a[18446744073709551615]"), ElementsAre("a18446744073709551615"));
  EXPECT_EQ(expandHostlist("a[0-65535]").size(), 65536u);
  EXPECT_EQ(expandHostlist("a[1-300]b[1-300]").size(), 90000u);
}

struct BadList {
  std::string list;
  std::string message;
};

void PrintTo(const BadList& b, std::ostream* os) { *os << "'" << b.list << "'"; }

class InvalidHostlistTest : public ::testing::TestWithParam<BadList> {};

TEST_P(InvalidHostlistTest, NamesTheColumnAndCharacter) {
  try {
    expandHostlist(GetParam().list);
    FAIL() << "expected ConfigError for " << GetParam().list;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.what(), GetParam().message);
    EXPECT_EQ(e.exitCode(), ExitCode::kConfig);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Errors, InvalidHostlistTest,
    ::testing::Values(BadList{"a[2-1]",
                              "invalid hostlist 'a[2-1]': expected a range whose low end is "
                              "not above its high end (2 > 1) at column 3, found '2'"},
                      BadList{"a[1-[2-3]]",
                              "invalid hostlist 'a[1-[2-3]]': expected a number at column "
                              "5, found '['"},
                      BadList{"a[1-x]",
                              "invalid hostlist 'a[1-x]': expected a number at column 5, "
                              "found 'x'"},
                      BadList{"a[1x]",
                              "invalid hostlist 'a[1x]': expected ',' or ']' after a range "
                              "at column 4, found 'x'"},
                      BadList{"a[1-2",
                              "invalid hostlist 'a[1-2': expected ']' (the '[' at column 2 "
                              "is not closed) at column 6, found the end of the list"},
                      BadList{"a[]",
                              "invalid hostlist 'a[]': expected a number at column 3, found "
                              "']'"},
                      BadList{"a[1,,2]",
                              "invalid hostlist 'a[1,,2]': expected a number at column 5, "
                              "found ','"},
                      BadList{"a[-1]",
                              "invalid hostlist 'a[-1]': expected a number at column 3, "
                              "found '-'"},
                      BadList{"a[1--3]",
                              "invalid hostlist 'a[1--3]': expected a number at column 5, "
                              "found '-'"},
                      BadList{"a[1-3]]",
                              "invalid hostlist 'a[1-3]]': expected a host name or '[' "
                              "(stray ']') at column 7, found ']'"},
                      BadList{"n1,a]b",
                              "invalid hostlist 'n1,a]b': expected a host name or '[' (stray "
                              "']') at column 5, found ']'"},
                      BadList{"a[0-65536]",
                              "invalid hostlist 'a[0-65536]': expected at most 65536 hosts "
                              "in one range at column 3, found '0'"},
                      BadList{"a[18446744073709551616]",
                              "invalid hostlist 'a[18446744073709551616]': expected a number "
                              "below 2^64 at column 3, found '1'"},
                      BadList{"a[ 1]",
                              "invalid hostlist 'a[ 1]': expected a number at column 3, "
                              "found ' '"}),
    listName<BadList>);

TEST(HostlistTest, RefusesListsBeyondTheHostLimit) {
  try {
    expandHostlist("a[0-65535]b[0-65535]");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expands to more than 262144 hosts"));
  }
}

// fuzz/regressions/job_layout and hostlist: lists of one and two million
// hosts took seconds to expand (over ten under the fuzz build's sanitizers
// on a busy machine); a list past the limit fails before anything is
// expanded.
TEST(HostlistTest, RefusesListsOfMillionsOfHostsBeforeExpandingThem) {
  EXPECT_THROW(expandHostlist("node[000-802]x[000-802]y[000-002]"), ConfigError);
  EXPECT_THROW(expandHostlist("a[01-100]b[01-100]c[01-100]"), ConfigError);
  EXPECT_EQ(expandHostlist("n[0-511][0-511]").size(), kMaxHostsInList);
}

TEST(CompressHostlistTest, MergesRunsKeepingOrderAndWidth) {
  EXPECT_EQ(compressHostlist({"n1", "n2", "n3", "n5", "m01", "m02", "m3"}), "n[1-3,5],m[01-02,3]");
  EXPECT_EQ(compressHostlist({"n3", "n1", "n2"}), "n[3,1-2]");
  EXPECT_EQ(compressHostlist({"alpha", "n9", "n10", "beta"}), "alpha,n[9-10],beta");
  EXPECT_EQ(compressHostlist({"n09", "n10"}), "n[09-10]");
  EXPECT_EQ(compressHostlist({"n009", "n10"}), "n[009,10]");
  EXPECT_EQ(compressHostlist({"gpu-01"}), "gpu-01");
  EXPECT_EQ(compressHostlist({}), "");
}

TEST(CompressHostlistTest, RoundTripsThroughExpand) {
  for (const Vector& v : kScontrolVectors) {
    EXPECT_EQ(expandHostlist(compressHostlist(v.hosts)), v.hosts) << v.list;
  }
  Hosts dup = {"n1", "n1", "n2", "x", "n0007", "n0008", "n7"};
  EXPECT_EQ(expandHostlist(compressHostlist(dup)), dup);
}

}  // namespace
}  // namespace distrun::cluster
