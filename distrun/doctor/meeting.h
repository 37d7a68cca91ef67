#pragma once

#include <chrono>
#include <string>

#include "distrun/doctor/probe_context.h"

namespace distrun::doctor {

// Where the doctor's tasks of one job step meet: a rendezvous store that
// rank 0 hosts on its node, at MASTER_ADDR and a port of its own, so that
// the MASTER_PORT it checks stays untouched. A plain value.
struct Meeting {
  std::string host;  // MASTER_ADDR
  int port = 0;
  std::string token;  // DISTRUN_TOKEN, else derived from the user's secret (docs/security.md)
  // How long rank 0 waits for every task's report, and tasks for rank 0:
  // two check time limits (the ordinary checks, then the timed ones) and
  // half a minute for srun to start every task.
  std::chrono::milliseconds answerWindow{0};
};

// The doctor's port for a step whose MASTER_PORT is `masterPort`: half the
// derived range away (master_port.h), wrapped into it, so that it is the
// same on every node and never MASTER_PORT itself.
int doctorPort(int masterPort);

// The meeting of ctx's step, from MASTER_ADDR and MASTER_PORT in ctx.env
// (set by thisTask for every task of a step). ConfigError naming the
// variable when one is missing or malformed.
Meeting meetingOf(const ProbeContext& ctx);

// The store keys of the exchange, one home for each.
std::string reportKey(int rank);           // a task's NodeReport (report_format.h text)
std::string clockAskKey(int nodeRank);     // a node's wall clock when it asked
std::string clockAnswerKey(int nodeRank);  // rank 0's wall clock when it answered
inline constexpr const char* kAllreduceKey = "doctor/allreduce";  // "go" or "skip:REASON"
inline constexpr const char* kDoneKey = "doctor/done";            // rank 0's exit status
inline constexpr const char* kLeftKey = "doctor/left";            // tasks that read kDoneKey

}  // namespace distrun::doctor
