#include "distrun/launch/worker_output.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/live_line.h"
#include "distrun/common/strings.h"

namespace distrun::launch {

std::map<int, int> parseStreamSpec(const std::string& value, const std::string& flag) {
  auto bits = [&](const std::string& text) {
    if (text.size() != 1 || text[0] < '0' || text[0] > '3') {
      throw UsageError(
          fmt::format("{} '{}': expected 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or a "
                      "map like '0:3,1:2'",
                      flag, value));
    }
    return text[0] - '0';
  };
  std::map<int, int> spec;
  if (value.find(':') == std::string::npos) {
    spec[-1] = bits(value);
    return spec;
  }
  for (const std::string& part : split(value, ',')) {
    size_t colon = part.find(':');
    if (colon == std::string::npos || colon == 0) bits("x");
    int rank = static_cast<int>(parseCount(part.substr(0, colon), flag));
    spec[rank] = bits(part.substr(colon + 1));
  }
  return spec;
}

int streamBits(const std::map<int, int>& spec, int localRank) {
  if (auto all = spec.find(-1); all != spec.end()) return all->second;
  auto it = spec.find(localRank);
  return it == spec.end() ? 0 : it->second;
}

namespace {

std::FILE* openLog(const std::string& dir, const char* name) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw IoError(
        fmt::format("cannot make the worker log folder '{}': {} (--log-dir: a folder "
                    "this user can write)",
                    dir, ec.message()));
  }
  std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    throw IoError(
        fmt::format("cannot write worker log '{}': {} (--log-dir: a folder this user "
                    "can write)",
                    path, std::strerror(errno)));
  }
  return f;
}

}  // namespace

WorkerOutput::WorkerOutput(std::string prefix, StreamRoute route, const std::string& dir)
    : prefix_(std::move(prefix)),
      out_{stdout, nullptr, route.stdoutToConsole, false, {}},
      err_{stderr, nullptr, route.stderrToConsole, true, {}} {
  if (route.stdoutToFile) out_.file = openLog(dir, "stdout.log");
  if (route.stderrToFile) err_.file = openLog(dir, "stderr.log");
}

WorkerOutput::~WorkerOutput() {
  finish();
  for (std::FILE* f : {out_.file, err_.file}) {
    if (f) std::fclose(f);
  }
}

void WorkerOutput::feed(Stream& s, std::string_view bytes) {
  s.partial.append(bytes);
  size_t start = 0;
  while (true) {
    size_t end = s.partial.find('\n', start);
    if (end == std::string::npos) break;
    emit(s, std::string_view(s.partial).substr(start, end - start));
    start = end + 1;
  }
  s.partial.erase(0, start);
}

void WorkerOutput::finish() {
  for (Stream* s : {&out_, &err_}) {
    if (!s->partial.empty()) {
      emit(*s, s->partial);
      s->partial.clear();
    }
  }
}

void WorkerOutput::emit(Stream& s, std::string_view line) {
  if (s.toConsole) {
    if (statusLine_) statusLine_->clear();
    std::string text = prefix_ + std::string(line) + "\n";
    std::fwrite(text.data(), 1, text.size(), s.console);
    std::fflush(s.console);
  }
  if (s.file) {
    std::fwrite(line.data(), 1, line.size(), s.file);
    std::fputc('\n', s.file);
    std::fflush(s.file);
  }
  if (s.copy) s.copy->offer(prefix_, line);
  if (s.isStderr) {
    tail_.emplace_back(line);
    if (tail_.size() > kTailLines) tail_.pop_front();
  }
}

FilteredCopy::FilteredCopy(std::vector<std::string> needles, const std::string& path)
    : needles_(std::move(needles)) {
  const std::filesystem::path file(path);
  file_ = openLog(file.parent_path().string(), file.filename().c_str());
}

FilteredCopy::~FilteredCopy() { std::fclose(file_); }

void FilteredCopy::offer(std::string_view prefix, std::string_view line) {
  for (const std::string& needle : needles_) {
    if (line.find(needle) == std::string_view::npos) continue;
    std::string text = std::string(prefix) + std::string(line) + "\n";
    std::fwrite(text.data(), 1, text.size(), file_);
    std::fflush(file_);
    return;
  }
}

std::vector<std::string> parseDuplicateFilters(const std::string& value) {
  std::vector<std::string> needles;
  std::string current;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != ',') {
      current += value[i];
    } else if (i + 1 < value.size() && value[i + 1] == ',') {
      current += ',';
      ++i;
    } else {
      if (!current.empty()) needles.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) needles.push_back(current);
  return needles;
}

std::string expandPrefix(const std::string& format, int node, int rank, int localRank,
                         const std::string& role, const std::string& host) {
  try {
    return fmt::format(fmt::runtime(format), fmt::arg("node", node), fmt::arg("rank", rank),
                       fmt::arg("local_rank", localRank), fmt::arg("role", role),
                       fmt::arg("host", host));
  } catch (const fmt::format_error& e) {
    throw UsageError(
        fmt::format("--log-prefix '{}': {} (fields: {{node}} {{rank}} {{local_rank}} "
                    "{{role}} {{host}})",
                    format, e.what()));
  }
}

}  // namespace distrun::launch
