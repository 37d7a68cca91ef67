#pragma once

#include <chrono>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "distrun/cluster/job_layout.h"
#include "distrun/cluster/site_profile.h"
#include "distrun/common/environment.h"
#include "distrun/launch/failure_report.h"
#include "distrun/rdzv/store_client.h"

namespace distrun::launch {

// Everything one node's agent needs, resolved from flags and scheduler.
struct AgentConfig {
  int numNodes = 1;
  int nodeRank = 0;
  int nproc = 1;
  std::string storeHost = "127.0.0.1";  // node 0's store, as agents reach it
  int storePort = 0;                    // 0: node 0 picks (one node only)
  std::string token;
  std::string host;  // this node, as other nodes and workers reach it
  std::string runId;
  std::vector<std::string> program;  // full argv of each worker
  int maxRestarts = 0;
  std::chrono::milliseconds joinTimeout{std::chrono::seconds(300)};
  std::chrono::milliseconds termTimeout{std::chrono::seconds(25)};
  std::string role = "default";
  std::string logPrefix = "[{node}:{rank}] ";
  std::string logDir;                // empty: no per-rank files
  std::map<int, int> redirects;      // parseStreamSpec
  std::map<int, int> tee;
  std::optional<std::set<int>> consoleRanks;  // --local-ranks-filter
  bool bindCpus = true;
  std::vector<int> cpus;             // this node's usable CPUs
  cluster::JobLayout layout;         // scheduler, job id, devices
  std::optional<cluster::SiteProfile> site;
};

// The node agent of `distrun run`: hosts the store on node 0, joins the
// rendezvous, starts this node's workers, supervises them with every other
// node (fail-fast, restarts, signals), and reports the first failure of the
// whole job. run() returns the exit code: 0, the first failing worker's
// code (128+signal for a signal), or 128+N when the agent got signal N.
// Throws RendezvousError/TimeoutError when the job cannot form.
class Agent {
 public:
  Agent(AgentConfig config, const Environment& env, std::ostream& err);
  int run();

 private:
  struct Round;
  int runAttempts();
  int reportFailure(const WorkerFailure& failure, int round);
  int finish(rdzv::StoreClient& store, int round, int code);

  AgentConfig config_;
  const Environment& env_;
  std::ostream& err_;
};

// Splits `cpus` evenly over `workers`: worker i gets a contiguous share (the
// first ones one more when it does not divide). Empty shares when there are
// fewer CPUs than workers (no binding then).
std::vector<std::vector<int>> splitCpus(const std::vector<int>& cpus,
                                        int workers);

}  // namespace distrun::launch
