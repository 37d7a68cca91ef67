// The merged trace against share/trace.schema.json, checked by Debian's
// python3-jsonschema (label: python; skipped, with the reason printed,
// where it is missing). One trace holds every kind of event the merge
// writes: spans, instants, counters, flows, metadata, PyTorch's events.
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "distrun/testing/command.h"
#include "distrun/testing/tree_paths.h"
#include "distrun/trace_merge/merge.h"
#include "distrun/trace_merge/trace_test_folder.h"

namespace distrun::trace_merge {
namespace {

using distrun::testing::quote;
using distrun::testing::runCommand;
using nlohmann::json;
using testing::agentHeader;
using testing::allreduce;
using testing::clockLine;
using testing::kMono;
using testing::kReal;
using testing::span;
using testing::TraceFolder;
using testing::workerHeader;
using testing::workerStarted;

// Checks the schema itself, then validates `trace` against it; "" when valid.
constexpr const char* kValidate =
    "import json, sys, jsonschema\n"
    "schema = json.load(open(sys.argv[1]))\n"
    "jsonschema.validators.validator_for(schema).check_schema(schema)\n"
    "jsonschema.validate(json.load(open(sys.argv[2])), schema)\n";

std::string schemaPath() { return std::string(DISTRUN_SOURCE_DIR) + "/share/trace.schema.json"; }

distrun::testing::CommandResult validate(const std::string& trace) {
  return runCommand("/usr/bin/python3 -c " + quote(kValidate) + " " + quote(schemaPath()) + " " +
                    quote(trace));
}

class TraceSchemaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (runCommand("/usr/bin/python3 -c 'import jsonschema'").exitCode != 0) {
      GTEST_SKIP() << "/usr/bin/python3 cannot import jsonschema (Debian: python3-jsonschema)";
    }
  }
  // A folder holding every kind of line and file.
  void writeEveryKind(const TraceFolder& folder) const {
    json counter = {{"name", "memory"},
                    {"ph", "C"},
                    {"ts", kMono + 5},
                    {"tid", "compute"},
                    {"args", {{"bytes", 1024}}}};
    json mark = {
        {"name", "snapshot"}, {"ph", "i"}, {"s", "t"}, {"ts", kMono + 6}, {"tid", "compute"}};
    for (int rank = 0; rank < 2; ++rank) {
      const std::string name = "rank" + std::to_string(rank) + ".jsonl";
      folder.append(name, {workerHeader(rank, "node" + std::to_string(rank), kMono, kReal),
                           clockLine(rank * 10.0, 4), span("forward", kMono + 1, 3), counter, mark,
                           allreduce(0, 0, kMono + 10, 2), allreduce(0, 1, kMono + 20, 2)});
    }
    folder.append("rank1.jsonl", {workerHeader(1, "node1", kMono + 50, kReal + 50, 1),
                                  span("forward", kMono + 60, 3)});
    folder.append("agent0.jsonl",
                  {agentHeader(0, "node0", kMono - 9, kReal - 9), workerStarted(0, kMono - 5)});
    json torch = {{"traceEvents", json::array({{{"name", "aten::mul"},
                                                {"ph", "X"},
                                                {"ts", 3},
                                                {"dur", 1},
                                                {"tid", 1},
                                                {"pid", "CPU functions"}}})},
                  {"distrunClockStartUs", kMono},
                  {"distrunRealtimeStartUs", kReal}};
    folder.appendText("torch-rank1.json", torch.dump());
    folder.appendText("rank1.jsonl", "{\"name\":\"cut");
  }
};

TEST_F(TraceSchemaTest, AMergedTraceOfEveryKindOfEventIsValid) {
  TraceFolder folder;
  writeEveryKind(folder);
  const std::string output = folder.file("trace.json");
  MergeReport report = mergeTraceFolder(folder.path(), output, "-o");
  ASSERT_EQ(report.flowPairs, 2u);
  distrun::testing::CommandResult r = validate(output);
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

TEST_F(TraceSchemaTest, TheSchemaRefusesASpanWithoutItsDuration) {
  TraceFolder folder;
  writeEveryKind(folder);
  const std::string output = folder.file("trace.json");
  mergeTraceFolder(folder.path(), output, "-o");
  json trace = testing::readJson(output);
  for (json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") e.erase("dur");
  }
  std::ofstream(output) << trace.dump();
  distrun::testing::CommandResult r = validate(output);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.err.find("'dur' is a required property"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace distrun::trace_merge
