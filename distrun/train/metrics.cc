#include "distrun/train/metrics.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/common/atomic_file.h"
#include "distrun/common/error.h"

namespace distrun::train {

namespace {

nlohmann::json orNull(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string metricsJson(const RunDescription& run, const std::vector<EpochMetrics>& epochs) {
  nlohmann::json doc = {{"workload", run.workload},
                        {"runtime", run.runtime},
                        {"world_size", run.worldSize},
                        {"batch_size", run.batchSize},
                        {"threads_per_rank", run.threadsPerRank},
                        {"epochs", nlohmann::json::array()}};
  for (const EpochMetrics& m : epochs) {
    doc["epochs"].push_back({{"epoch", m.epoch},
                             {"train_loss", m.trainLoss},
                             {"test_loss", orNull(m.testLoss)},
                             {"test_accuracy", orNull(m.testAccuracy)},
                             {"samples_per_second", m.samplesPerSecond},
                             {"seconds", m.seconds},
                             {"sync_seconds", m.syncSeconds}});
  }
  return doc.dump(2) + "\n";
}

void writeMetricsFile(const std::string& path, const RunDescription& run,
                      const std::vector<EpochMetrics>& epochs) {
  writeMetricsText(path, metricsJson(run, epochs));
}

void writeMetricsText(const std::string& path, const std::string& text) {
  writeFileAtomically(path, text, "--metrics");
}

std::string epochLine(const EpochMetrics& m, int64_t epochs) {
  std::string line = fmt::format("epoch {}/{}  loss {:.4f}", m.epoch, epochs, m.trainLoss);
  if (m.testLoss) line += fmt::format("  test loss {:.4f}", *m.testLoss);
  if (m.testAccuracy) line += fmt::format("  accuracy {:.2f}%", *m.testAccuracy * 100);
  line += fmt::format("  {:.0f} samples/s  {:.1f} s", m.samplesPerSecond, m.seconds);
  return line;
}

}  // namespace distrun::train

namespace distrun::train {

std::vector<EpochMetrics> parseMetricsEpochs(const std::string& json) {
  std::vector<EpochMetrics> out;
  try {
    const nlohmann::json doc = nlohmann::json::parse(json);
    for (const auto& e : doc.at("epochs")) {
      EpochMetrics m;
      m.epoch = e.at("epoch").get<int64_t>();
      m.trainLoss = e.at("train_loss").get<double>();
      if (!e.at("test_loss").is_null()) m.testLoss = e.at("test_loss").get<double>();
      if (!e.at("test_accuracy").is_null()) m.testAccuracy = e.at("test_accuracy").get<double>();
      m.samplesPerSecond = e.at("samples_per_second").get<double>();
      m.seconds = e.at("seconds").get<double>();
      if (e.contains("sync_seconds")) m.syncSeconds = e["sync_seconds"].get<std::vector<double>>();
      out.push_back(m);
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(std::string("metrics history: ") + e.what());
  }
  return out;
}

namespace {

template <typename T>
void readField(const nlohmann::json& doc, const char* name, T& field) {
  if (doc.contains(name)) field = doc.at(name).get<T>();
}

}  // namespace

RunDescription parseRunDescription(const std::string& json) {
  RunDescription run;
  try {
    const nlohmann::json doc = nlohmann::json::parse(json);
    if (!doc.is_object()) throw DataError("metrics history: expected a JSON object");
    readField(doc, "workload", run.workload);
    readField(doc, "runtime", run.runtime);
    readField(doc, "world_size", run.worldSize);
    readField(doc, "batch_size", run.batchSize);
    readField(doc, "threads_per_rank", run.threadsPerRank);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(std::string("metrics history: ") + e.what());
  }
  return run;
}

}  // namespace distrun::train
