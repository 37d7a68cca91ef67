#include "distrun/launch/job_events.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/rdzv/rendezvous.h"

namespace distrun::launch {

namespace {

const char* kindName(JobEvent::Kind kind) {
  switch (kind) {
    case JobEvent::Kind::kFailure:
      return "failure";
    case JobEvent::Kind::kSignal:
      return "signal";
    case JobEvent::Kind::kComplete:
      return "complete";
    case JobEvent::Kind::kCheckpoint:
      return "checkpoint";
    case JobEvent::Kind::kStoreLost:
      return "lost";
    case JobEvent::Kind::kHang:
      return "hang";
    case JobEvent::Kind::kNodeLost:
      return "node_lost";
    case JobEvent::Kind::kNodeWaiting:
      return "node_waiting";
    case JobEvent::Kind::kNodeDied:
      return "node_died";
  }
  return "?";
}

JobEvent decode(const std::string& text) {
  size_t nl = text.find('\n');
  std::string kind = text.substr(0, nl);
  std::string payload = nl == std::string::npos ? "" : text.substr(nl + 1);
  for (auto k : {JobEvent::Kind::kFailure, JobEvent::Kind::kSignal, JobEvent::Kind::kComplete,
                 JobEvent::Kind::kCheckpoint, JobEvent::Kind::kHang, JobEvent::Kind::kNodeLost,
                 JobEvent::Kind::kNodeDied, JobEvent::Kind::kNodeWaiting}) {
    if (kind == kindName(k)) return JobEvent{k, payload};
  }
  return JobEvent{JobEvent::Kind::kStoreLost, fmt::format("unknown event '{}' in the store", kind)};
}

}  // namespace

std::string encodeEvent(const JobEvent& event) {
  return std::string(kindName(event.kind)) + "\n" + event.payload;
}

void publishEvent(rdzv::Store& store, int round, const JobEvent& event) {
  long long index = store.add(rdzv::roundKey(round, "events"), 1) - 1;
  store.set(rdzv::roundKey(round, fmt::format("event/{}", index)), encodeEvent(event));
}

EventWatcher::EventWatcher(std::string host, int port, std::string token, std::string keySpace,
                           int round, int notifyFd)
    : round_(round), notifyFd_(notifyFd) {
  thread_ =
      std::thread([this, host, port, token, keySpace] { watch(host, port, token, keySpace); });
}

EventWatcher::~EventWatcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (client_) client_->interrupt();
  }
  thread_.join();
}

void EventWatcher::watch(std::string host, int port, std::string token, std::string keySpace) {
  try {
    auto client =
        std::make_unique<rdzv::StoreClient>(host, port, token, std::chrono::seconds(30), keySpace);
    rdzv::StoreClient* c = client.get();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      client_ = std::move(client);
      if (stopping_) return;
    }
    for (int i = 0;; ++i) {
      std::optional<std::string> value =
          c->get(rdzv::roundKey(round_, fmt::format("event/{}", i)), std::chrono::hours(24 * 365));
      if (value) push(decode(*value));
    }
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    events_.push_back(JobEvent{JobEvent::Kind::kStoreLost, e.what()});
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(notifyFd_, &one, sizeof(one));
  }
}

void EventWatcher::push(JobEvent event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(notifyFd_, &one, sizeof(one));
}

std::deque<JobEvent> EventWatcher::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::deque<JobEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace distrun::launch
