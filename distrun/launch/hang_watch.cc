#include "distrun/launch/hang_watch.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "distrun/common/error.h"

namespace distrun::launch {

namespace {

// Whole milliseconds, so that every node compares the same numbers.
double secondsOf(std::chrono::steady_clock::duration d) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) /
         1000.0;
}

}  // namespace

std::string HangAnswer::toJson() const {
  nlohmann::ordered_json j;
  j["node"] = nodeRank;
  j["worker"] = worker ? nlohmann::ordered_json::parse(worker->toJson()) : nullptr;
  return j.dump();
}

HangAnswer HangAnswer::fromJson(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    HangAnswer a;
    a.nodeRank = j.at("node");
    if (!j.at("worker").is_null()) a.worker = WorkerFailure::fromJson(j.at("worker").dump());
    return a;
  } catch (const nlohmann::json::exception& e) {
    throw RendezvousError(fmt::format("malformed hang answer from a peer: {}", e.what()));
  }
}

bool waitsForPeers(const std::string& waits) {
  const std::string main = waits.substr(0, waits.find(" (main thread)"));
  if (main.empty()) return false;
  for (const char* marker : {"futex", "epoll", "ep_poll", "poll", "select", "sk_wait", "wait_woken",
                             "inet_csk_accept", "unix_stream", "tcp_recv", "pipe_read"}) {
    if (main.find(marker) != std::string::npos) return true;
  }
  return false;
}

bool likelierHangCause(const WorkerFailure& a, const WorkerFailure& b) {
  if (a.stopped != b.stopped) return a.stopped;
  if (!a.waits.empty() && !b.waits.empty()) {
    const bool aWaits = waitsForPeers(a.waits);
    if (aWaits != waitsForPeers(b.waits)) return !aWaits;
  }
  if (a.hungSeconds != b.hungSeconds) return a.hungSeconds > b.hungSeconds;
  return a.rank < b.rank;
}

bool HangWatch::sample(const std::vector<WorkerProgress>& workers,
                       std::chrono::milliseconds timeout, TimePoint now) {
  timeout_ = timeout;
  lastSample_ = now;
  std::map<int, Worker> next;
  bool reached = false;
  for (const WorkerProgress& w : workers) {
    auto before = workers_.find(w.record.localRank);
    bool moved = before == workers_.end() || madeProgress(w, before->second.last);
    TimePoint since = moved ? now : before->second.since;
    next[w.record.localRank] = Worker{w, since};
    reached = reached || now - since >= timeout;
  }
  workers_ = std::move(next);
  return reached && !answered_;
}

HangAnswer HangWatch::answer(int nodeRank) {
  answered_ = true;
  HangAnswer a{nodeRank, std::nullopt};
  for (const auto& [local, w] : workers_) {
    if (w.since == lastSample_) continue;  // it made progress at the last sample
    WorkerFailure f = w.last.record;
    f.hungSeconds = secondsOf(lastSample_ - w.since);
    f.hangTimeout = secondsOf(timeout_);
    f.stopped = w.last.stopped;
    f.reportsProgress = w.last.reports > 0;
    if (!a.worker || likelierHangCause(f, *a.worker)) a.worker = f;
  }
  return a;
}

void HangWatch::take(const HangAnswer& answer, TimePoint now) {
  answers_.emplace(answer.nodeRank, answer);
  if (!firstAnswer_) firstAnswer_ = now;
}

std::optional<WorkerFailure> HangWatch::verdict(int numNodes, TimePoint now) {
  if (decided_ || !firstAnswer_) return std::nullopt;
  bool all = static_cast<int>(answers_.size()) >= numNodes;
  if (!all && now < *firstAnswer_ + kHangAnswerGrace) return std::nullopt;
  decided_ = true;
  std::optional<WorkerFailure> named;
  for (const auto& [node, a] : answers_) {
    if (a.worker && (!named || likelierHangCause(*a.worker, *named))) named = a.worker;
  }
  return named;
}

}  // namespace distrun::launch
