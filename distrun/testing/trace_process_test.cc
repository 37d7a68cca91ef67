// `distrun train --trace` end to end (label: multiproc): two ranks as
// processes under the node agent leave one trace file each, and the
// agent its own (docs/observability.md, "The trace files").
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/common/temp_dir_testing.h"
#include "distrun/testing/command.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::testing {
namespace {

using Json = nlohmann::json;
using ::testing::Contains;

std::string distrun() { return quote(binaryPath("distrun")); }

// A trace file's lines; each must be whole JSON (the job ended normally).
std::vector<Json> traceLines(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no trace file " << path;
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << path << ": " << line;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<Json> named(const std::vector<Json>& lines, const std::string& name) {
  std::vector<Json> out;
  for (const Json& j : lines) {
    if (j.contains("name") && j["name"] == name) out.push_back(j);
  }
  return out;
}

// Every collective span by (comm, seq): its name and bytes.
std::map<std::pair<int, int>, std::pair<std::string, int64_t>> collectives(
    const std::vector<Json>& lines) {
  std::map<std::pair<int, int>, std::pair<std::string, int64_t>> out;
  for (const Json& j : lines) {
    if (!j.contains("cat") || j["cat"] != "comm" || !j["args"].contains("seq")) continue;
    out[{j["args"]["comm"], j["args"]["seq"]}] = {j["name"], j["args"]["bytes"]};
  }
  return out;
}

const Json& clockOffset(const std::vector<Json>& lines) {
  static const Json none;
  for (const Json& j : lines) {
    if (j.contains("clock_offset")) return j["clock_offset"];
  }
  ADD_FAILURE() << "no clock_offset line";
  return none;
}

// The merged trace against share/trace.schema.json, by Debian's
// python3-jsonschema (said, not failed, where it is missing).
void expectSchemaValid(const std::string& trace) {
  if (runCommand("/usr/bin/python3 -c 'import jsonschema'").exitCode != 0) {
    std::cout << "schema not checked: /usr/bin/python3 cannot import jsonschema "
                 "(Debian: python3-jsonschema)\n";
    return;
  }
  const std::string schema = std::string(DISTRUN_SOURCE_DIR) + "/share/trace.schema.json";
  const CommandResult r = runCommand(
      "/usr/bin/python3 -c 'import json, sys, jsonschema; "
      "jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' " +
      quote(schema) + " " + quote(trace));
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

std::string trainCommand(const std::string& dir, const std::string& more) {
  return "timeout 300 " + distrun() + " train --nproc-per-node 2 --trace " + quote(dir) + more +
         " linear --epochs 1 --limit-train 256 --progress none";
}

TEST(TraceProcessTest, TwoRanksAndTheAgentEachLeaveATrace) {
  const TempDir tmp;
  const std::string dir = tmp.file("trace");
  const CommandResult r = runCommand(trainCommand(dir, ""));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  std::vector<Json> rank[2] = {traceLines(dir + "/rank0.jsonl"), traceLines(dir + "/rank1.jsonl")};
  for (int k = 0; k < 2; ++k) {
    const std::vector<Json>& lines = rank[k];
    ASSERT_GT(lines.size(), 10u);
    EXPECT_EQ(lines[0]["trace"], "distrun");
    EXPECT_EQ(lines[0]["rank"], k);
    EXPECT_EQ(lines[0]["world_size"], 2);
    EXPECT_EQ(lines[0]["local_rank"], k);
    EXPECT_EQ(lines[0]["process"], "worker");
    EXPECT_EQ(named(lines, "step").size(), 4u) << "256 samples, 32 per rank and step";
    for (const char* name : {"forward", "backward", "optimizer", "data", "gradient_wait"}) {
      EXPECT_EQ(named(lines, name).size(), 4u) << name;
    }
    const std::vector<Json> buckets = named(lines, "bucket_ready");
    ASSERT_EQ(buckets.size(), 4u);
    EXPECT_EQ(buckets[3]["args"]["step"], 4);
    size_t bucketAllreduces = 0;
    for (const Json& a : named(lines, "allreduce")) {
      EXPECT_EQ(a["tid"], "comm");
      EXPECT_TRUE(a["args"].contains("algorithm"));
      bucketAllreduces += a["args"].contains("bucket");
    }
    EXPECT_EQ(bucketAllreduces, 4u);
  }
  // The same collectives on both ranks, paired by (comm, seq).
  EXPECT_EQ(collectives(rank[0]), collectives(rank[1]));
  EXPECT_GE(collectives(rank[0]).size(), 8u);
  EXPECT_EQ(clockOffset(rank[0])["offset_us"], 0);
  EXPECT_GT(clockOffset(rank[1])["rtt_us"].get<double>(), 0);

  const std::vector<Json> agent = traceLines(dir + "/agent0.jsonl");
  ASSERT_FALSE(agent.empty());
  EXPECT_EQ(agent[0]["process"], "agent");
  EXPECT_EQ(agent[0]["rank"], -1);
  EXPECT_EQ(named(agent, "rendezvous").size(), 1u);
  EXPECT_EQ(named(agent, "worker_started").size(), 2u);
  const std::vector<Json> exits = named(agent, "worker_exited");
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0]["args"]["exit_code"], 0);
  std::set<int> pids;
  for (const Json& s : named(agent, "worker_started")) pids.insert(s["args"]["pid"].get<int>());
  EXPECT_THAT(pids, Contains(rank[1][0]["pid"].get<int>()));
  std::filesystem::remove_all(dir);
}

// The clock seam shifts rank 1 by 5 s: the offset measured at the start
// says so, within the half round trip NTP's estimate guarantees (both ranks
// read this host's one monotonic clock). And the window holds: steps 2-3.
TEST(TraceProcessTest, TheMeasuredOffsetReflectsASkewAndTheWindowHolds) {
  const TempDir tmp;
  const std::string dir = tmp.file("trace");
  const CommandResult r = runCommand("DISTRUN_TRACE_CLOCK_SKEW_US=0,5000000 " +
                                     trainCommand(dir, " --trace-steps 2:3"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::vector<Json> rank1 = traceLines(dir + "/rank1.jsonl");
  const Json& offset = clockOffset(rank1);
  const double rtt = offset["rtt_us"];
  EXPECT_LE(std::abs(offset["offset_us"].get<double>() + 5e6), rtt / 2 + 1) << offset;
  for (const std::string file : {"/rank0.jsonl", "/rank1.jsonl"}) {
    std::vector<int64_t> steps;
    for (const Json& s : named(traceLines(dir + file), "step")) {
      steps.push_back(s["args"]["global_step"]);
    }
    EXPECT_EQ(steps, (std::vector<int64_t>{2, 3})) << file;
  }
  std::filesystem::remove_all(dir);
}

// `distrun trace merge` of a real run whose rank 1 is 5 s off: one trace
// with both ranks, every collective linked across them, and the clocks
// aligned (the two ends of one all-reduce within 1 s, not 5 s apart).
TEST(TraceProcessTest, ASkewedRunMergesIntoOneAlignedTrace) {
  const TempDir tmp;
  const std::string dir = tmp.file("trace");
  CommandResult r = runCommand("DISTRUN_TRACE_CLOCK_SKEW_US=0,5000000 " + trainCommand(dir, ""));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  r = runCommand(distrun() + " trace merge " + quote(dir) + " -o " + quote(dir + "/t.json"));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  expectSchemaValid(dir + "/t.json");
  const Json trace = Json::parse(std::ifstream(dir + "/t.json"));
  std::map<std::pair<int, int>, std::vector<double>> ends;  // (comm, seq): each rank's end
  std::set<int> pids;
  size_t flowEnds = 0;
  for (const Json& e : trace["traceEvents"]) {
    flowEnds += e["ph"] == "f";
    if (e["ph"] != "X" || e["cat"] != "comm" || !e["args"].contains("seq")) continue;
    pids.insert(e["pid"].get<int>());
    ends[{e["args"]["comm"], e["args"]["seq"]}].push_back(e["ts"].get<double>() +
                                                          e["dur"].get<double>());
  }
  EXPECT_EQ(pids.size(), 2u);
  ASSERT_GE(ends.size(), 8u);
  EXPECT_EQ(flowEnds, ends.size()) << "one flow from rank 0 to rank 1 per collective";
  for (const auto& [key, atRanks] : ends) {
    ASSERT_EQ(atRanks.size(), 2u) << "comm " << key.first << " #" << key.second;
    EXPECT_LT(std::abs(atRanks[0] - atRanks[1]), 1e6) << "comm " << key.first << " #" << key.second;
  }
  std::filesystem::remove_all(dir);
}

// Rank 1 SIGKILLed mid-run (its last flush may end in a part of a line):
// the folder still merges, with rank 1's steps up to its death.
TEST(TraceProcessTest, ARankKilledMidRunStillMerges) {
  const TempDir tmp;
  const std::string dir = tmp.file("trace");
  const std::string rank1 = quote(dir + "/rank1.jsonl");
  const std::string script = "timeout 300 " + distrun() + " train --nproc-per-node 2 --trace " +
                             quote(dir) +
                             " linear --epochs 1000 --progress none & job=$!; "
                             "for i in $(seq 600); do [ \"$(grep -c '\"name\":\"step\"' " +
                             rank1 +
                             " 2>/dev/null)\" -ge 3 ] 2>/dev/null && break; sleep 0.1; done; "
                             "kill -9 $(head -1 " +
                             rank1 + " | sed 's/.*\"pid\":\\([0-9]*\\).*/\\1/'); wait $job";
  CommandResult r = runCommand("bash -c " + quote(script));
  ASSERT_NE(r.exitCode, 0) << "the job ends failed when a rank is killed";
  r = runCommand(distrun() + " trace merge " + quote(dir));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const Json trace = Json::parse(std::ifstream(dir + "/trace.json"));
  std::map<int, size_t> steps;  // pid: steps
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "step") ++steps[e["pid"].get<int>()];
  }
  EXPECT_EQ(steps.size(), 2u);
  for (const auto& [pid, n] : steps) EXPECT_GE(n, 3u) << "pid " << pid;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace distrun::testing
