// Golden scripts: each site profile in both modes (one distrun per node for
// run/train/bench, one task per rank for exec). DISTRUN_UPDATE_GOLDEN=1
// rewrites the files; review the diff before committing it.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "distrun/cluster/site_profile.h"
#include "distrun/common/system.h"
#include "distrun/submit/batch_job.h"
#include "distrun/submit/submit_plan.h"
#include "distrun/testing/tree_paths.h"

namespace distrun::submit {
namespace {

const std::string kSites = std::string(DISTRUN_SOURCE_DIR) + "/share/sites";
const std::string kGolden = std::string(DISTRUN_SOURCE_DIR) + "/distrun/submit/testdata/";

struct Golden {
  std::string name;  // testdata/NAME.sbatch
  std::string site;
  SubmitRequest request;
};

std::ostream& operator<<(std::ostream& os, const Golden& g) { return os << g.name; }

class BatchScriptTest : public ::testing::TestWithParam<Golden> {};

TEST_P(BatchScriptTest, MatchesItsGoldenScript) {
  cluster::SiteProfile site = cluster::loadSiteProfile(GetParam().site, {kSites});
  site.path = site.name + ".site";  // the script must not depend on the checkout's path
  std::string script = batchScript(planBatchJob(GetParam().request, &site));
  std::string path = kGolden + GetParam().name + ".sbatch";
  if (std::getenv("DISTRUN_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << script;
  // A missing golden script reads as empty: the test fails with the hint.
  EXPECT_EQ(script, readFileIfPresent(path).value_or(""))
      << "DISTRUN_UPDATE_GOLDEN=1 rewrites " << path;
}

SubmitRequest request(std::vector<std::string> command, int nodes) {
  SubmitRequest r;
  r.command = std::move(command);
  r.nodes = nodes;
  r.time = "1:00:00";
  r.distrun = "/opt/distrun/bin/distrun";
  return r;
}

SubmitRequest withAccount(SubmitRequest r, const std::string& account) {
  r.account = account;
  return r;
}

const Golden kGoldens[] = {
    {"generic_train", "generic",
     request({"train", "--nproc-per-node", "2", "linear", "--epochs", "3"}, 2)},
    {"generic_exec", "generic",
     [] {
       SubmitRequest r = request({"exec", "--", "python3", "ddp.py"}, 2);
       r.nprocPerNode = 4;
       return r;
     }()},
    {"lumi_train", "lumi",
     withAccount(request({"train", "mnist", "--epochs", "14"}, 4), "project_465000000")},
    {"lumi_exec", "lumi",
     withAccount(request({"exec", "--", "python", "-u", "mnist_DDP.py", "--gpu"}, 2),
                 "project_465000000")},
    {"marenostrum5_run", "marenostrum5",
     [] {
       SubmitRequest r = request({"run", "train.py", "--lr", "0.1"}, 2);
       r.qos = "acc_debug";
       r.sbatchArgs = {"--exclusive"};
       return r;
     }()},
    {"marenostrum5_exec", "marenostrum5",
     [] {
       SubmitRequest r = request({"exec", "--", "python", "train.py"}, 2);
       r.qos = "acc_debug";
       return r;
     }()},
};
INSTANTIATE_TEST_SUITE_P(Sites, BatchScriptTest, ::testing::ValuesIn(kGoldens),
                         [](const auto& test) { return test.param.name; });

}  // namespace
}  // namespace distrun::submit
