// The report as JSON: the document scripts read (schema distrun-doctor/1,
// docs/doctor.md) and the text one node's results travel in to rank 0.
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>

#include "distrun/common/error.h"
#include "distrun/doctor/report_format.h"

namespace distrun::doctor {
namespace {

// Keys in the order written, so that "schema" comes first.
using json = nlohmann::ordered_json;

// A figure; null for one that is not finite (JSON has no NaN).
json figure(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

json valuesJson(const std::map<std::string, double>& values) {
  json out = json::object();
  for (const auto& [name, value] : values) out[name] = figure(value);
  return out;
}

// A result, its first field naming what it is a result of: its node in the
// document, its check in a node's report.
json resultJson(const char* key, const std::string& of, const CheckResult& r) {
  return json{{key, of},
              {"state", stateName(r.state)},
              {"detail", r.detail},
              {"fix", r.fix},
              {"values", valuesJson(r.values)},
              {"facts", json(r.facts)},
              {"seconds", figure(r.seconds)}};
}

json summaryJson(const DoctorReport& report) {
  json summary = {{"ok", 0}, {"warn", 0}, {"fail", 0}, {"skip", 0}};
  for (const NodeReport& node : report.nodes) {
    for (const CheckResult& r : node.results) {
      summary[stateName(r.state)] = summary[stateName(r.state)].get<int64_t>() + 1;
    }
  }
  return summary;
}

json checkJson(const DoctorReport& report, const std::string& check) {
  json results = json::array();
  for (const NodeReport& node : report.nodes) {
    const CheckResult* r = node.find(check);
    if (r == nullptr) continue;
    results.push_back(resultJson("node", node.node, *r));
  }
  return json{
      {"name", check}, {"state", stateName(checkState(report, check))}, {"results", results}};
}

std::string dumped(const json& doc, int indent) {
  return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

// Reads one node's report text; every complaint names the node it came from.
class NodeReportReader {
 public:
  explicit NodeReportReader(std::string from) : from_(std::move(from)) {}

  NodeReport read(const std::string& text) const {
    json doc = parsed(text);
    NodeReport report;
    report.node = textAt(doc, "node", "");
    const json& results = at(doc, "results", "");
    if (!results.is_array()) complain(" has \"results\" that is not a list");
    for (size_t i = 0; i < results.size(); ++i) {
      report.results.push_back(result(results[i], "result " + std::to_string(i + 1)));
    }
    return report;
  }

 private:
  [[noreturn]] void complain(const std::string& what) const {
    throw DataError("the doctor report from " + from_ + what);
  }

  json parsed(const std::string& text) const {
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {
      complain(" is not JSON: " + std::string(e.what()));
    }
    if (!doc.is_object()) complain(" is not a JSON object");
    return doc;
  }

  // "" for the report itself, ": result 2" for one of its results.
  static std::string in(const std::string& where) { return where.empty() ? "" : ": " + where; }

  const json& at(const json& obj, const char* key, const std::string& where) const {
    if (!obj.contains(key)) complain(in(where) + " has no \"" + key + "\"");
    return obj[key];
  }

  std::string textAt(const json& obj, const char* key, const std::string& where) const {
    const json& v = at(obj, key, where);
    if (!v.is_string()) complain(in(where) + " has \"" + key + "\" that is not a string");
    return v.get<std::string>();
  }

  double figureOf(const json& v, const std::string& name, const std::string& where) const {
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) complain(in(where) + " has \"" + name + "\" that is not a number");
    return v.get<double>();
  }

  const json& objectAt(const json& obj, const char* key, const std::string& where) const {
    const json& v = at(obj, key, where);
    if (!v.is_object()) complain(in(where) + " has \"" + key + "\" that is not an object");
    return v;
  }

  CheckState stateAt(const json& obj, const std::string& where) const {
    std::string state = textAt(obj, "state", where);
    try {
      return parseState(state);
    } catch (const ConfigError& e) {
      complain(in(where) + ": " + e.what());
    }
  }

  std::map<std::string, double> valuesAt(const json& obj, const std::string& where) const {
    std::map<std::string, double> values;
    for (const auto& [name, v] : objectAt(obj, "values", where).items()) {
      values[name] = figureOf(v, name, where);
    }
    return values;
  }

  std::map<std::string, std::string> factsAt(const json& obj, const std::string& where) const {
    std::map<std::string, std::string> facts;
    for (const auto& [name, v] : objectAt(obj, "facts", where).items()) {
      if (!v.is_string()) complain(in(where) + " has fact \"" + name + "\" that is not a string");
      facts[name] = v.get<std::string>();
    }
    return facts;
  }

  CheckResult result(const json& obj, const std::string& where) const {
    if (!obj.is_object()) complain(in(where) + " is not a JSON object");
    CheckResult r;
    r.check = textAt(obj, "check", where);
    r.state = stateAt(obj, where);
    r.detail = textAt(obj, "detail", where);
    r.fix = textAt(obj, "fix", where);
    r.values = valuesAt(obj, where);
    r.facts = factsAt(obj, where);
    r.seconds = figureOf(at(obj, "seconds", where), "seconds", where);
    return r;
  }

  std::string from_;
};

}  // namespace

void writeJson(std::ostream& out, const DoctorReport& report) {
  json nodes = json::array();
  for (const NodeReport& node : report.nodes) nodes.push_back(node.node);
  json checks = json::array();
  for (const std::string& check : reportedChecks(report)) {
    checks.push_back(checkJson(report, check));
  }
  json doc = {{"schema", "distrun-doctor/1"},      {"state", stateName(worstState(report))},
              {"seconds", figure(report.seconds)}, {"nodes", nodes},
              {"summary", summaryJson(report)},    {"checks", checks}};
  out << dumped(doc, 2) << "\n";
}

std::string nodeReportText(const NodeReport& report) {
  json results = json::array();
  for (const CheckResult& r : report.results) results.push_back(resultJson("check", r.check, r));
  return dumped(json{{"node", report.node}, {"results", results}}, -1);
}

NodeReport parseNodeReport(const std::string& text, const std::string& from) {
  return NodeReportReader(from).read(text);
}

}  // namespace distrun::doctor
