#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/doctor/checks.h"
#include "distrun/doctor/report_format.h"

namespace distrun::doctor {
namespace {

std::string nhc(const DoctorReport& report) {
  std::ostringstream out;
  writeNhc(out, report);
  return out.str();
}

DoctorReport threeNodes() {
  DoctorReport report;
  report.checks = {"tmpdir", "network", "answer"};
  for (const char* name : {"node1", "node2", "node3"}) {
    report.nodes.push_back({name,
                            {ok("tmpdir", "$TMPDIR /tmp has 20.0 GiB free"),
                             ok("network", "hsn0 is up"), ok("answer", "reported")}});
  }
  return report;
}

// What sh makes of `line` when scontrol is a function that prints each of
// its arguments on a line of its own.
std::string argumentsSeenBySh(const std::string& line) {
  std::string script = ::testing::TempDir() + "/report_nhc_test.sh";
  std::ofstream(script) << "scontrol() { printf '%s\\n' \"$@\"; }\n" << line << "\n";
  FILE* sh = ::popen(("sh " + script + " 2>&1").c_str(), "r");
  std::string out;
  char buffer[256];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), sh)) > 0;) out.append(buffer, n);
  ::pclose(sh);
  return out;
}

TEST(ReportNhcTest, AHealthyReportPrintsNothing) { EXPECT_EQ(nhc(threeNodes()), ""); }

TEST(ReportNhcTest, WarningsAndSkipsDoNotDrain) {
  DoctorReport report = threeNodes();
  *report.nodes[0].find("network") = warn("network", "NCCL_SOCKET_IFNAME is unset", "set it");
  *report.nodes[1].find("tmpdir") = skip("tmpdir", "no $TMPDIR");
  EXPECT_EQ(nhc(report), "");
}

TEST(ReportNhcTest, EachFailureIsAnErrorAndItsNodeDrainsForTheFirst) {
  DoctorReport report = threeNodes();
  *report.nodes[1].find("tmpdir") = fail("tmpdir", "$TMPDIR /tmp/x has 0 B free", "clean it");
  *report.nodes[1].find("network") = fail("network", "hsn9 does not exist", "unset it");
  report.nodes[2] = {"node3", {fail("answer", "did not report within 60 s", "see slurmd")}};
  EXPECT_EQ(nhc(report),
            "ERROR:  nhc:  Health check failed:  node2: tmpdir: $TMPDIR /tmp/x has 0 B free\n"
            "ERROR:  nhc:  Health check failed:  node2: network: hsn9 does not exist\n"
            "scontrol update NodeName=node2 State=DRAIN "
            "Reason=\"NHC: distrun doctor: tmpdir: \\$TMPDIR /tmp/x has 0 B free\"\n"
            "ERROR:  nhc:  Health check failed:  node3: answer: did not report within 60 s\n"
            "scontrol update NodeName=node3 State=DRAIN "
            "Reason=\"NHC: distrun doctor: answer: did not report within 60 s\"\n");
}

// A detail with every character that is special inside double quotes,
// and a line break, reaches scontrol as it was (the break as a blank).
TEST(ReportNhcTest, TheDrainLineIsShellThatPassesTheReasonUnchanged) {
  DoctorReport report = threeNodes();
  const std::string detail = "\"quoted\" $HOME `id` back\\slash 'single'\nsecond line";
  *report.nodes[0].find("tmpdir") = fail("tmpdir", detail, "");
  std::istringstream lines(nhc(report));
  std::string error, drain;
  std::getline(lines, error);
  std::getline(lines, drain);
  EXPECT_EQ(error,
            "ERROR:  nhc:  Health check failed:  node1: tmpdir: \"quoted\" $HOME `id` "
            "back\\slash 'single' second line");
  EXPECT_EQ(argumentsSeenBySh(drain),
            "update\nNodeName=node1\nState=DRAIN\n"
            "Reason=NHC: distrun doctor: tmpdir: \"quoted\" $HOME `id` back\\slash 'single' "
            "second line\n");
}

}  // namespace
}  // namespace distrun::doctor
