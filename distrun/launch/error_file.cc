#include "distrun/launch/error_file.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "distrun/common/strings.h"
#include "distrun/common/system.h"

namespace distrun::launch {
namespace {

long long timestampOf(const nlohmann::json& holder) {
  if (!holder.is_object() || !holder.contains("timestamp")) return 0;
  const nlohmann::json& t = holder.at("timestamp");
  if (t.is_number_integer()) return t.get<long long>();
  if (!t.is_string()) return 0;
  try {
    return std::stoll(t.get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

// The file's mtime in ms since the epoch: to the millisecond where the
// record's own timestamp counts seconds; 0 when it cannot be read.
long long writtenMsOf(const std::string& path) {
  struct stat st = {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<long long>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

}  // namespace

std::optional<RecordedError> readErrorFile(const std::string& path) {
  const std::optional<std::string> text = readFileIfPresent(path);
  if (!text || text->empty()) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("message")) return std::nullopt;
  const nlohmann::json& message = j.at("message");
  RecordedError e;
  if (message.is_string()) {
    e.message = message.get<std::string>();
    e.timestamp = timestampOf(j);
  } else if (message.is_object() && message.value("message", nlohmann::json()).is_string()) {
    e.message = message.at("message").get<std::string>();
    const nlohmann::json extra = message.value("extraInfo", nlohmann::json::object());
    if (extra.is_object() && extra.value("py_callstack", nlohmann::json()).is_string()) {
      for (const std::string& line : split(extra.at("py_callstack").get<std::string>(), '\n')) {
        if (!line.empty()) e.traceback.push_back(line);
      }
    }
    e.timestamp = timestampOf(extra);
  } else {
    return std::nullopt;
  }
  e.writtenMs = writtenMsOf(path);
  return e;
}

}  // namespace distrun::launch
