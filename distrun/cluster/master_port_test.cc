#include "distrun/cluster/master_port.h"

#include <set>

#include <gtest/gtest.h>

namespace distrun::cluster {
namespace {

TEST(MasterPortTest, SameIdsGiveSamePortInRange) {
  int port = derivedMasterPort("123456", "0");
  EXPECT_EQ(port, derivedMasterPort("123456", "0"));
  EXPECT_GE(port, kFirstDerivedPort);
  EXPECT_LT(port, kFirstDerivedPort + kDerivedPortCount);
}

TEST(MasterPortTest, StepsOfOneJobNeverCollide) {
  std::set<int> ports;
  for (int step = 0; step < 62; ++step) {
    ports.insert(derivedMasterPort("987654", std::to_string(step)));
  }
  ports.insert(derivedMasterPort("987654", "batch"));
  ports.insert(derivedMasterPort("987654", "interactive"));
  EXPECT_EQ(ports.size(), 64u);
}

TEST(MasterPortTest, NearbyJobsNeverCollide) {
  std::set<int> ports;
  for (int job = 4000000; job < 4000625; ++job) {
    ports.insert(derivedMasterPort(std::to_string(job), "0"));
  }
  EXPECT_EQ(ports.size(), 625u);
}

TEST(MasterPortTest, NonNumericIdsAreHashed) {
  EXPECT_EQ(derivedMasterPort("1234.pbs01", ""), derivedMasterPort("1234", ""));
  int a = derivedMasterPort("kvs_123_0", "");
  EXPECT_GE(a, kFirstDerivedPort);
  EXPECT_LT(a, kFirstDerivedPort + kDerivedPortCount);
  EXPECT_NE(a, derivedMasterPort("kvs_124_0", ""));
}

}  // namespace
}  // namespace distrun::cluster
