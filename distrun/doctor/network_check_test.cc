#include "distrun/doctor/network_check.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "distrun/doctor/checks.h"

namespace distrun::doctor {
namespace {

NetInterface up(const std::string& name, const std::string& address) {
  return {name, true, true, name == "lo", {address}};
}

// A LUMI-like node: the management network, two Slingshot rails of which
// the second has lost its link, and loopback.
std::vector<NetInterface> lumiNode() {
  NetInterface hsn1{"hsn1", true, false, false, {"10.253.1.7"}};
  NetInterface docker{"docker0", false, false, false, {}};
  return {docker, up("hsn0", "10.253.0.7"), hsn1, up("lo", "127.0.0.1"), up("nmn0", "10.100.0.7")};
}

NetworkSettings nccl(const std::string& value, const std::string& site = "") {
  return {value, std::nullopt, site, ""};
}
NetworkSettings gloo(const std::string& value) { return {std::nullopt, value, "", ""}; }

TEST(ParseNcclIfnameTest, PrefixesExactAndExcluded) {
  IfnameFilter f = parseNcclIfname("hsn0,hsn1");
  EXPECT_FALSE(f.exclude);
  EXPECT_FALSE(f.exact);
  EXPECT_EQ(f.names, (std::vector<std::string>{"hsn0", "hsn1"}));
  EXPECT_TRUE(f.matches("hsn0"));
  EXPECT_TRUE(f.matches("hsn01"));  // prefixes
  EXPECT_FALSE(f.matches("hsn2"));
  f = parseNcclIfname("=eth0");
  EXPECT_TRUE(f.exact);
  EXPECT_TRUE(f.matches("eth0"));
  EXPECT_FALSE(f.matches("eth01"));
  f = parseNcclIfname("^=docker0,lo");
  EXPECT_TRUE(f.exclude);
  EXPECT_TRUE(f.exact);
  EXPECT_EQ(f.names, (std::vector<std::string>{"docker0", "lo"}));
  f = parseNcclIfname("^docker");
  EXPECT_TRUE(f.exclude);
  EXPECT_FALSE(f.exact);
  EXPECT_TRUE(f.matches("docker1"));
}

TEST(ParseNcclIfnameTest, PortsAndBlanksAreDropped) {
  IfnameFilter f = parseNcclIfname(" eth0:5000, ,ib");
  EXPECT_EQ(f.names, (std::vector<std::string>{"eth0", "ib"}));
}

TEST(NetworkTest, NeitherVariableSetListsWhatTheLibrariesChooseFrom) {
  CheckResult r = judgeNetwork(lumiNode(), NetworkSettings{});
  EXPECT_EQ(r.check, "network");
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME unset: NCCL and Gloo choose the interface "
            "themselves, among hsn0, nmn0");
  EXPECT_EQ(r.values.at("usable_interfaces"), 2);
  EXPECT_EQ(r.facts.at("interfaces"), "hsn0,nmn0");
}

TEST(NetworkTest, OnlyLoopbackIsOfferedOnASingleMachine) {
  CheckResult r = judgeNetwork({up("lo", "127.0.0.1")}, NetworkSettings{});
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME unset: NCCL and Gloo choose the interface "
            "themselves, among lo");
}

TEST(NetworkTest, AnInterfaceThatDoesNotExistFails) {
  CheckResult r = judgeNetwork(lumiNode(), nccl("nosuch0"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "NCCL_SOCKET_IFNAME=nosuch0 matches no usable interface; the node has docker0 "
            "(down), hsn0 (up), hsn1 (no link), lo (up), nmn0 (up)");
  EXPECT_EQ(r.fix, "set NCCL_SOCKET_IFNAME to one of hsn0, nmn0");
}

TEST(NetworkTest, TheSitesWrongValueNamesTheProfile) {
  CheckResult r = judgeNetwork(lumiNode(), nccl("ib", "lumi"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.fix,
            "set NCCL_SOCKET_IFNAME to one of hsn0, nmn0 (the site profile lumi sets it: correct "
            "its `set NCCL_SOCKET_IFNAME` line, or choose another profile with --site)");
}

TEST(NetworkTest, ARailWithoutLinkWarns) {
  CheckResult r = judgeNetwork(lumiNode(), nccl("hsn0,hsn1"));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail,
            "NCCL_SOCKET_IFNAME=hsn0,hsn1: hsn1 matches no usable interface (NCCL uses hsn0); "
            "the node has docker0 (down), hsn0 (up), hsn1 (no link), lo (up), nmn0 (up)");
  EXPECT_EQ(r.fix, "set NCCL_SOCKET_IFNAME to one of hsn0, nmn0");
}

TEST(NetworkTest, APrefixMatchingUsableInterfacesPasses) {
  CheckResult r = judgeNetwork(lumiNode(), nccl("hsn"));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "NCCL_SOCKET_IFNAME=hsn: NCCL uses hsn0");
}

TEST(NetworkTest, ExactNamesMustMatchWhole) {
  EXPECT_EQ(judgeNetwork(lumiNode(), nccl("=hsn")).state, CheckState::kFail);
  EXPECT_EQ(judgeNetwork(lumiNode(), nccl("=hsn0")).state, CheckState::kOk);
}

TEST(NetworkTest, AnExclusionLeavingNothingFails) {
  CheckResult r = judgeNetwork({up("eth0", "10.0.0.1")}, nccl("^eth"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail, "NCCL_SOCKET_IFNAME=^eth leaves no usable interface; the node has eth0 (up)");
  r = judgeNetwork(lumiNode(), nccl("^docker,lo"));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "NCCL_SOCKET_IFNAME=^docker,lo: NCCL uses hsn0, nmn0");
}

TEST(NetworkTest, GlooNeedsEachNamedInterfaceUp) {
  CheckResult r = judgeNetwork(lumiNode(), gloo("hsn0"));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail, "GLOO_SOCKET_IFNAME=hsn0: Gloo uses hsn0");
  r = judgeNetwork(lumiNode(), gloo("eth0"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail,
            "GLOO_SOCKET_IFNAME=eth0: the node has no interface eth0; the node has docker0 "
            "(down), hsn0 (up), hsn1 (no link), lo (up), nmn0 (up)");
  EXPECT_EQ(r.fix, "set GLOO_SOCKET_IFNAME to one of hsn0, nmn0");
  r = judgeNetwork(lumiNode(), gloo("docker0"));
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail.rfind("GLOO_SOCKET_IFNAME=docker0: docker0 is down; ", 0), 0u) << r.detail;
}

TEST(NetworkTest, GlooPrefixesDoNotCount) {
  EXPECT_EQ(judgeNetwork(lumiNode(), gloo("hsn")).state, CheckState::kFail);
}

TEST(NetworkTest, SeveralGlooInterfacesWarnForDistrunsOwnCommunicator) {
  CheckResult r = judgeNetwork(lumiNode(), gloo("hsn0,nmn0"));
  EXPECT_EQ(r.state, CheckState::kWarn);
  EXPECT_EQ(r.detail.rfind("GLOO_SOCKET_IFNAME=hsn0,nmn0 names 2: PyTorch spreads over them, but "
                           "distrun train and distrun bench take one name; ",
                           0),
            0u)
      << r.detail;
  EXPECT_EQ(r.fix, "name one interface in GLOO_SOCKET_IFNAME for distrun train and bench");
}

TEST(NetworkTest, BothVariablesAreJudged) {
  CheckResult r = judgeNetwork(lumiNode(), NetworkSettings{"hsn0", "nosuch0", "", ""});
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(r.detail.rfind("GLOO_SOCKET_IFNAME=nosuch0: the node has no interface nosuch0", 0), 0u)
      << r.detail;
  r = judgeNetwork(lumiNode(), NetworkSettings{"hsn0", "hsn0", "", ""});
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail,
            "NCCL_SOCKET_IFNAME=hsn0: NCCL uses hsn0; GLOO_SOCKET_IFNAME=hsn0: Gloo uses hsn0");
}

TEST(NetworkTest, AnEmptyValueCountsAsUnset) {
  CheckResult r = judgeNetwork(lumiNode(), nccl(""));
  EXPECT_EQ(r.state, CheckState::kOk);
  EXPECT_EQ(r.detail.rfind("NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME unset", 0), 0u);
}

TEST(ReadInterfacesTest, ThisMachineHasLoopback) {
  std::vector<NetInterface> all = readInterfaces();
  auto lo = std::find_if(all.begin(), all.end(), [](const NetInterface& i) { return i.loopback; });
  ASSERT_NE(lo, all.end());
  EXPECT_TRUE(lo->up);
  EXPECT_FALSE(lo->addresses.empty());
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(),
                             [](const auto& a, const auto& b) { return a.name < b.name; }));
}

TEST(CheckNetworkTest, ANameThatDoesNotExistFailsHere) {
  ProbeContext ctx;
  ctx.env.set("NCCL_SOCKET_IFNAME", "nosuch0");
  CheckResult r = checkNetwork(ctx);
  EXPECT_EQ(r.state, CheckState::kFail);
  EXPECT_EQ(
      r.detail.rfind("NCCL_SOCKET_IFNAME=nosuch0 matches no usable interface; the node has ", 0),
      0u)
      << r.detail;
}

TEST(CheckNetworkTest, TheSiteProfileThatSetsTheVariableIsNamed) {
  ProbeContext ctx;
  ctx.env.set("NCCL_SOCKET_IFNAME", "nosuch0");
  ctx.site = cluster::SiteProfile{};
  ctx.site->name = "lumi";
  ctx.site->settings = {{"NCCL_SOCKET_IFNAME", "nosuch0"}};
  CheckResult r = checkNetwork(ctx);
  EXPECT_NE(r.fix.find("(the site profile lumi sets it"), std::string::npos) << r.fix;
}

}  // namespace
}  // namespace distrun::doctor
