#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "distrun/rdzv/store_client.h"

namespace distrun::launch {

// What one agent tells all the others during an attempt, through the store.
// Events of a round form one sequence (`r<k>/event/<i>`), the same order
// for every agent, so every agent makes the same decision: the first
// failure in it that is a worker's own error (else the first) is the job's
// root cause.
struct JobEvent {
  enum class Kind {
    kFailure,      // payload: WorkerFailure JSON
    kSignal,       // payload: the signal number
    kComplete,     // every node's workers exited 0 (or 79, checkpointed), or,
                   // after echoes only, exited at all (supervisor.h)
    kCheckpoint,   // a worker exited 79 (checkpointed); payload: its rank
    kStoreLost,    // (local) the watcher lost the store; payload: why
    kHang,         // a node's answer to a suspected hang; payload: HangAnswer JSON
    kNodeLost,     // a node's agent is gone (its will, set by the store); payload: its name
    kNodeDied,     // kNodeLost where its process is gone for sure (its kernel closed
                   // the connection; a partition's far side never is): fencing counts it
    kNodeWaiting,  // elastic: a node waits to join the next round; payload: its name
  };
  Kind kind;
  std::string payload;
};

// Appends events with the agent's own store connection.
void publishEvent(rdzv::Store& store, int round, const JobEvent& event);

// The bytes publishEvent stores for `event`, for a will that the store
// appends on the agent's behalf.
std::string encodeEvent(const JobEvent& event);

// Watches a round's event sequence on its own connection and thread (in the
// job's `keySpace`, StoreClient's), and signals `notifyFd` (an eventfd)
// whenever events are ready to take().
class EventWatcher {
 public:
  EventWatcher(std::string host, int port, std::string token, std::string keySpace, int round,
               int notifyFd);
  ~EventWatcher();  // interrupts and joins
  EventWatcher(const EventWatcher&) = delete;
  EventWatcher& operator=(const EventWatcher&) = delete;

  std::deque<JobEvent> take();

 private:
  void watch(std::string host, int port, std::string token, std::string keySpace);
  void push(JobEvent event);

  int round_;
  int notifyFd_;
  std::mutex mutex_;
  std::deque<JobEvent> events_;
  std::unique_ptr<rdzv::StoreClient> client_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace distrun::launch
