#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/error.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/report_format.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::doctor {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

CheckResult measured(CheckResult r, std::map<std::string, double> values,
                     std::map<std::string, std::string> facts, double seconds) {
  r.values = std::move(values);
  r.facts = std::move(facts);
  r.seconds = seconds;
  return r;
}

// Two nodes that answered and one that did not; every state, figures and
// facts, and a check the report lists that no node ran.
DoctorReport sampleReport() {
  DoctorReport report;
  report.checks = {"tmpdir", "python", "gpu", "answer", "matmul"};
  report.seconds = 14.25;
  report.nodes.push_back(
      {"node1",
       {measured(ok("tmpdir", "$TMPDIR /tmp has 20.0 GiB free"), {{"free_bytes", 2.0e10}},
                 {{"path", "/tmp"}}, 0.5),
        measured(ok("python", "torch 2.1.2 imports"), {}, {{"torch_version", "2.1.2"}}, 1.75),
        skip("gpu", "no GPU on this node"), ok("answer", "reported")}});
  report.nodes.push_back({"node2",
                          {measured(fail("tmpdir", "$TMPDIR /tmp/x has 0 B free", "clean it"),
                                    {{"free_bytes", 0}}, {{"path", "/tmp/x"}}, 0.25),
                           warn("python", "torch 2.1.2 imports slowly", "warm the cache"),
                           skip("gpu", "no GPU on this node"), ok("answer", "reported")}});
  report.nodes.push_back({"node3", {fail("answer", "did not report within 60 s", "see slurmd")}});
  return report;
}

json document(const DoctorReport& report) {
  std::ostringstream out;
  writeJson(out, report);
  return json::parse(out.str());
}

// The fields of `doc` as docs/doctor.md names them ("checks[].name"); the
// keys inside "values" and "facts" are names of figures and facts, not
// fields of the schema.
void collectFields(const json& doc, const std::string& path, std::set<std::string>& fields) {
  if (doc.is_array()) {
    for (const json& item : doc) collectFields(item, path + "[]", fields);
    return;
  }
  if (!doc.is_object() || path.ends_with("values") || path.ends_with("facts")) return;
  for (const auto& [key, value] : doc.items()) {
    std::string field = path.empty() ? key : path + "." + key;
    fields.insert(field);
    collectFields(value, field, fields);
  }
}

// The lines of docs/doctor.md under "### JSON", up to the next heading.
std::vector<std::string> jsonSection() {
  std::ifstream in(std::string(DISTRUN_SOURCE_DIR) + "/docs/doctor.md");
  std::vector<std::string> lines;
  bool inJson = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) inJson = line == "### JSON";
    if (inJson) lines.push_back(line);
  }
  return lines;
}

// The rows of that section's table: field, type.
std::map<std::string, std::string> documentedFields() {
  std::map<std::string, std::string> fields;
  for (const std::string& line : jsonSection()) {
    if (!line.starts_with("| `")) continue;
    size_t end = line.find('`', 3);
    size_t typeEnd = line.find(" |", end + 4);
    fields[line.substr(3, end - 3)] = line.substr(end + 4, typeEnd - end - 4);
  }
  return fields;
}

// That section's example document.
json documentedExample() {
  std::string text;
  bool inExample = false;
  for (const std::string& line : jsonSection()) {
    if (line.starts_with("```")) inExample = line == "```json";
    if (inExample && line != "```json") text += line + "\n";
  }
  return json::parse(text);
}

bool hasType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "list") return value.is_array();
  if (type == "object") return value.is_object();
  return false;
}

// Every value at `path` ("checks[].results[].node") in `doc`.
void valuesAt(const json& doc, const std::string& path, std::vector<json>& out) {
  if (path.empty()) return out.push_back(doc);
  size_t dot = path.find('.');
  std::string head = path.substr(0, dot);
  std::string rest = dot == std::string::npos ? "" : path.substr(dot + 1);
  bool list = head.ends_with("[]");
  const json& child = doc.at(list ? head.substr(0, head.size() - 2) : head);
  if (!list) return valuesAt(child, rest, out);
  for (const json& item : child) valuesAt(item, rest, out);
}

void expectDocumentedFields(const json& doc) {
  std::map<std::string, std::string> documented = documentedFields();
  ASSERT_FALSE(documented.empty()) << "no field table under ### JSON in docs/doctor.md";
  std::set<std::string> written, named;
  collectFields(doc, "", written);
  for (const auto& [field, type] : documented) named.insert(field);
  EXPECT_EQ(written, named);
  for (const auto& [field, type] : documented) {
    std::vector<json> values;
    valuesAt(doc, field, values);
    for (const json& v : values) EXPECT_TRUE(hasType(v, type)) << field << " " << v.dump();
  }
}

TEST(ReportJsonTest, TheDocumentHasExactlyTheDocumentedFields) {
  expectDocumentedFields(document(sampleReport()));
}

TEST(ReportJsonTest, TheDocumentedExampleHasExactlyTheDocumentedFields) {
  expectDocumentedFields(documentedExample());
}

TEST(ReportJsonTest, TheDocumentSaysTheWorstStateAndCountsTheResults) {
  json doc = document(sampleReport());
  EXPECT_EQ(doc["schema"], "distrun-doctor/1");
  EXPECT_EQ(doc["state"], "fail");
  EXPECT_EQ(doc["seconds"], 14.25);
  EXPECT_EQ(doc["nodes"], json({"node1", "node2", "node3"}));
  EXPECT_EQ(doc["summary"], json({{"ok", 4}, {"warn", 1}, {"fail", 2}, {"skip", 2}}));
  std::vector<std::string> names, states;
  for (const json& check : doc["checks"]) {
    names.push_back(check["name"]);
    states.push_back(check["state"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"tmpdir", "python", "gpu", "answer", "matmul"}));
  EXPECT_EQ(states, (std::vector<std::string>{"fail", "warn", "skip", "fail", "skip"}));
  EXPECT_EQ(doc["checks"][4]["results"], json::array());
}

TEST(ReportJsonTest, AHealthyReportIsOk) {
  DoctorReport report = sampleReport();
  report.nodes.resize(1);
  EXPECT_EQ(document(report)["state"], "ok");
  EXPECT_EQ(document(DoctorReport{})["state"], "skip");
}

// Reads the document back into a report: every result comes back whole.
TEST(ReportJsonTest, TheDocumentReadsBackIntoTheSameResults) {
  DoctorReport report = sampleReport();
  json doc = document(report);
  std::map<std::string, NodeReport> back;
  for (const json& check : doc["checks"]) {
    for (json r : check["results"]) {
      std::string node = r["node"];
      r.erase("node");
      r["check"] = check["name"];
      json one = {{"node", node}, {"results", {r}}};
      back[node].node = node;
      back[node].results.push_back(parseNodeReport(one.dump(), node).results[0]);
    }
  }
  ASSERT_EQ(back.size(), report.nodes.size());
  for (const NodeReport& node : report.nodes) {
    for (const CheckResult& r : node.results) {
      const CheckResult* b = back[node.node].find(r.check);
      ASSERT_NE(b, nullptr) << node.node << " " << r.check;
      EXPECT_EQ(b->state, r.state);
      EXPECT_EQ(b->detail, r.detail);
      EXPECT_EQ(b->fix, r.fix);
      EXPECT_EQ(b->values, r.values);
      EXPECT_EQ(b->facts, r.facts);
      EXPECT_EQ(b->seconds, r.seconds);
    }
  }
}

TEST(ReportJsonTest, TextThatIsNotUtf8IsReplacedNotAnError) {
  DoctorReport report = sampleReport();
  report.nodes[0].results[0].detail = "bad \xff byte";
  EXPECT_EQ(document(report)["checks"][0]["results"][0]["detail"], "bad \xEF\xBF\xBD byte");
}

TEST(ReportJsonTest, ANodeReportRoundTrips) {
  NodeReport node = sampleReport().nodes[1];
  node.results[1].values["matmul_ms"] = 40.5;
  node.results[1].facts["interface"] = "hsn0";
  NodeReport back = parseNodeReport(nodeReportText(node), "node2");
  EXPECT_EQ(back.node, "node2");
  ASSERT_EQ(back.results.size(), node.results.size());
  for (size_t i = 0; i < node.results.size(); ++i) {
    EXPECT_EQ(back.results[i].check, node.results[i].check);
    EXPECT_EQ(back.results[i].state, node.results[i].state);
    EXPECT_EQ(back.results[i].detail, node.results[i].detail);
    EXPECT_EQ(back.results[i].fix, node.results[i].fix);
    EXPECT_EQ(back.results[i].values, node.results[i].values);
    EXPECT_EQ(back.results[i].facts, node.results[i].facts);
    EXPECT_EQ(back.results[i].seconds, node.results[i].seconds);
  }
}

TEST(ReportJsonTest, AFigureThatIsNotFiniteTravelsAsNull) {
  NodeReport node{"node1", {measured(ok("matmul", ""), {{"matmul_ms", NAN}}, {}, INFINITY)}};
  std::string text = nodeReportText(node);
  EXPECT_THAT(text, HasSubstr("\"values\":{\"matmul_ms\":null}"));
  NodeReport back = parseNodeReport(text, "node1");
  EXPECT_TRUE(std::isnan(back.results[0].values["matmul_ms"]));
  EXPECT_TRUE(std::isnan(back.results[0].seconds));
}

// The message parseNodeReport gives for `text` from node7, checking that
// it is a DataError (exit code 65).
std::string complaint(const std::string& text) {
  try {
    parseNodeReport(text, "node7");
  } catch (const DataError& e) {
    EXPECT_EQ(e.exitCode(), ExitCode::kData);
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text;
  return "";
}

// A good node report's text with result 1's `key` set to `value`
// (removed when `value` is null).
std::string withField(const std::string& key, const json& value) {
  json doc = json::parse(nodeReportText(sampleReport().nodes[1]));
  if (value.is_null()) {
    doc["results"][0].erase(key);
  } else {
    doc["results"][0][key] = value;
  }
  return doc.dump();
}

TEST(ReportJsonTest, TextThatIsNotJsonNamesTheNode) {
  EXPECT_THAT(complaint("{\"node\": \"node7\", \"res"),
              StartsWith("the doctor report from node7 is not JSON: [json.exception.parse_error"));
  EXPECT_EQ(complaint("[1, 2]"), "the doctor report from node7 is not a JSON object");
}

TEST(ReportJsonTest, AMissingFieldIsNamed) {
  EXPECT_EQ(complaint("{\"results\": []}"), "the doctor report from node7 has no \"node\"");
  EXPECT_EQ(complaint("{\"node\": \"node7\"}"), "the doctor report from node7 has no \"results\"");
  for (const char* key : {"check", "state", "detail", "fix", "values", "facts", "seconds"}) {
    EXPECT_EQ(complaint(withField(key, nullptr)),
              "the doctor report from node7: result 1 has no \"" + std::string(key) + "\"");
  }
}

TEST(ReportJsonTest, AFieldOfTheWrongTypeIsNamed) {
  EXPECT_EQ(complaint("{\"node\": 7, \"results\": []}"),
            "the doctor report from node7 has \"node\" that is not a string");
  EXPECT_EQ(complaint("{\"node\": \"node7\", \"results\": {}}"),
            "the doctor report from node7 has \"results\" that is not a list");
  EXPECT_EQ(complaint("{\"node\": \"node7\", \"results\": [3]}"),
            "the doctor report from node7: result 1 is not a JSON object");
  EXPECT_EQ(complaint(withField("detail", 3)),
            "the doctor report from node7: result 1 has \"detail\" that is not a string");
  EXPECT_EQ(complaint(withField("values", json::array())),
            "the doctor report from node7: result 1 has \"values\" that is not an object");
  EXPECT_EQ(complaint(withField("values", {{"free_bytes", "lots"}})),
            "the doctor report from node7: result 1 has \"free_bytes\" that is not a number");
  EXPECT_EQ(complaint(withField("facts", {{"path", 3}})),
            "the doctor report from node7: result 1 has fact \"path\" that is not a string");
  EXPECT_EQ(complaint(withField("seconds", "1 s")),
            "the doctor report from node7: result 1 has \"seconds\" that is not a number");
}

TEST(ReportJsonTest, AnUnknownStateIsNamed) {
  EXPECT_EQ(complaint(withField("state", "sick")),
            "the doctor report from node7: result 1: check state 'sick' is not one of skip, ok, "
            "warn, fail");
}

}  // namespace
}  // namespace distrun::doctor
