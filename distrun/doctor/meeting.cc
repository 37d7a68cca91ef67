#include "distrun/doctor/meeting.h"

#include <unistd.h>

#include <fmt/format.h>

#include "distrun/cluster/master_port.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/common/user_secret.h"

namespace distrun::doctor {

int doctorPort(int masterPort) {
  const int offset = masterPort - cluster::kFirstDerivedPort + cluster::kDerivedPortCount / 2;
  const int wrapped = ((offset % cluster::kDerivedPortCount) + cluster::kDerivedPortCount) %
                      cluster::kDerivedPortCount;
  return cluster::kFirstDerivedPort + wrapped;
}

namespace {

std::string required(const Environment& env, const std::string& name) {
  auto value = env.get(name);
  if (!value || value->empty()) {
    throw ConfigError(name +
                      " is not set: distrun doctor needs it to gather the nodes' "
                      "results (run it under srun, or set it)");
  }
  return *value;
}

int portFrom(const std::string& text) {
  try {
    size_t used = 0;
    const int port = std::stoi(text, &used);
    if (used == text.size() && port > 0 && port < 65536) return port;
  } catch (const std::exception&) {
  }
  throw ConfigError("MASTER_PORT=" + text + " is not a TCP port (1-65535)");
}

std::chrono::milliseconds answerWindow(const ProbeContext& ctx) {
  return 2 * ctx.limit() + std::chrono::seconds(30);
}

}  // namespace

Meeting meetingOf(const ProbeContext& ctx) {
  Meeting m;
  m.host = required(ctx.env, "MASTER_ADDR");
  m.port = doctorPort(portFrom(required(ctx.env, "MASTER_PORT")));
  auto token = ctx.env.get("DISTRUN_TOKEN");
  m.token = token ? *token
                  : derivedToken(ctx.env, fmt::format("doctor:{}:{}/{}", m.host, m.port,
                                                      ctx.layout.worldSize));
  m.answerWindow = answerWindow(ctx);
  return m;
}

std::string reportKey(int rank) { return "doctor/report/" + std::to_string(rank); }
std::string clockAskKey(int nodeRank) { return "doctor/clock/ask/" + std::to_string(nodeRank); }
std::string clockAnswerKey(int nodeRank) {
  return "doctor/clock/answer/" + std::to_string(nodeRank);
}

}  // namespace distrun::doctor
