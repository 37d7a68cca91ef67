#include "distrun/comm_bench/report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace distrun::comm_bench {

double BenchReport::averageBusBandwidth() const {
  if (rows.empty()) return 0;
  double sum = 0;
  for (const ResultRow& r : rows) sum += r.outOfPlace.busBw + r.inPlace.busBw;
  return sum / static_cast<double>(2 * rows.size());
}

long long BenchReport::wrongTotal() const {
  long long total = 0;
  for (const ResultRow& r : rows) {
    total += r.outOfPlace.wrong.value_or(0) + r.inPlace.wrong.value_or(0);
  }
  return total;
}

std::string formatTime(double us) {
  if (us >= 1e6) return fmt::format("{:7.0f}", us);
  if (us >= 100) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

namespace {

std::string wrongText(const Measurement& m) { return m.wrong ? std::to_string(*m.wrong) : "N/A"; }

std::string stepText(const BenchReport& r) {
  return r.stepFactor > 1 ? fmt::format("{}(factor)", r.stepFactor)
                          : fmt::format("{}(bytes)", r.stepBytes);
}

void writePreamble(std::ostream& out, const BenchReport& r) {
  out << fmt::format("# distrun bench {} {}: backend {}, {} ranks{}{}\n", r.collective, r.version,
                     r.backend, r.ranks, r.transport.empty() ? "" : ", over " + r.transport,
                     r.reductions.empty() ? "" : "; reductions in " + r.reductions);
  out << fmt::format(
      "#  minBytes {} maxBytes {} step: {} warmup iters: {} iters: {} "
      "validation: {} average: {}\n#\n",
      r.minBytes, r.maxBytes, stepText(r), r.warmupIters, r.iters, r.checkIters, r.average);
  out << "# Using devices\n";
  for (const RankInfo& info : r.rankInfo) {
    out << fmt::format("#  Rank {:2} Pid {:6} on {:>10} {}\n", info.rank, info.pid, info.host,
                       info.device);
  }
  out << "#\n";
}

void writeHalf(std::ostream& out, const Measurement& m) {
  out << fmt::format("  {} {:7.2f} {:7.2f} {:>6}", formatTime(m.timeUs), m.algBw, m.busBw,
                     wrongText(m));
}

}  // namespace

void writeTable(std::ostream& out, const BenchReport& r) {
  writePreamble(out, r);
  out << "#                                                              out-of-place"
         "                       in-place          \n"
         "#       size         count      type   redop    root     time   algbw   busbw"
         " #wrong     time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
         "            (us)  (GB/s)  (GB/s)       \n";
  for (const ResultRow& row : r.rows) {
    out << fmt::format("{:12}  {:12}  {:>8}  {:>6}  {:6}", row.bytes, row.count, row.type,
                       row.redop, row.root);
    writeHalf(out, row.outOfPlace);
    writeHalf(out, row.inPlace);
    out << "\n";
  }
  const long long wrong = r.wrongTotal();
  out << fmt::format("# Out of bounds values : {} {}\n", wrong, wrong == 0 ? "OK" : "FAILED");
  out << fmt::format("# Avg bus bandwidth    : {:g} \n#\n", r.averageBusBandwidth());
}

namespace {

nlohmann::ordered_json halfJson(const Measurement& m) {
  nlohmann::ordered_json j;
  j["time"] = m.timeUs;
  j["alg_bw"] = m.algBw;
  j["bus_bw"] = m.busBw;
  j["nwrong"] = m.wrong ? nlohmann::ordered_json(*m.wrong) : nlohmann::ordered_json(nullptr);
  return j;
}

}  // namespace

void writeJson(std::ostream& out, const BenchReport& r) {
  nlohmann::ordered_json j;
  j["version"] = r.version;
  j["collective"] = r.collective;
  j["backend"] = r.backend;
  j["transport"] = r.transport;
  j["reductions"] = r.reductions;
  j["ranks"] = r.ranks;
  auto& config = j["config"];
  config["minimum_bytes"] = r.minBytes;
  config["maximum_bytes"] = r.maxBytes;
  if (r.stepFactor > 1) {
    config["step_factor"] = r.stepFactor;
  } else {
    config["step_bytes"] = r.stepBytes;
  }
  config["warmup_iters"] = r.warmupIters;
  config["iterations"] = r.iters;
  config["validation"] = r.checkIters;
  config["average"] = r.average;
  j["devices"] = nlohmann::ordered_json::array();
  for (const RankInfo& info : r.rankInfo) {
    nlohmann::ordered_json device = {
        {"rank", info.rank}, {"pid", info.pid}, {"hostname", info.host}};
    if (info.device != "cpu") device["device"] = info.device;
    j["devices"].push_back(std::move(device));
  }
  j["results"] = nlohmann::ordered_json::array();
  for (const ResultRow& row : r.rows) {
    nlohmann::ordered_json e;
    e["size"] = row.bytes;
    e["count"] = row.count;
    e["type"] = row.type;
    e["redop"] = row.redop;
    e["root"] = row.root;
    e["out_of_place"] = halfJson(row.outOfPlace);
    e["in_place"] = halfJson(row.inPlace);
    j["results"].push_back(e);
  }
  const long long wrong = r.wrongTotal();
  j["out_of_bounds"] = {{"count", wrong}, {"okay", wrong == 0}};
  j["average_bus_bandwidth"] = {{"bandwidth", r.averageBusBandwidth()}, {"okay", wrong == 0}};
  out << j.dump(2) << "\n";
}

void writeCsv(std::ostream& out, const BenchReport& r) {
  out << "collective,backend,ranks,size,count,type,redop,root,"
         "oop_time_us,oop_algbw_gbs,oop_busbw_gbs,oop_wrong,"
         "ip_time_us,ip_algbw_gbs,ip_busbw_gbs,ip_wrong\n";
  for (const ResultRow& row : r.rows) {
    out << fmt::format("{},{},{},{},{},{},{},{}", r.collective, r.backend, r.ranks, row.bytes,
                       row.count, row.type, row.redop, row.root);
    for (const Measurement* m : {&row.outOfPlace, &row.inPlace}) {
      out << fmt::format(",{:.3f},{:.4f},{:.4f},{}", m->timeUs, m->algBw, m->busBw,
                         m->wrong ? std::to_string(*m->wrong) : "");
    }
    out << "\n";
  }
}

}  // namespace distrun::comm_bench
