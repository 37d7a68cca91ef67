// `distrun doctor --container IMAGE`: the Python check imports torch inside
// a real image (distrun wrap's, through distrun enter), not on the host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"
#include "distrun/testing/container_tools.h"

namespace distrun::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json pythonResult(const CommandResult& r) {
  json report = json::parse(r.out);
  for (const json& check : report.at("checks")) {
    if (check.at("name") == "python") return check.at("results").at(0);
  }
  return json::object();
}

TEST(DoctorContainerTest, PythonImportsTorchInsideTheImage) {
  if (std::string why = containerToolsMissing({"mmdebstrap", "mksquashfs", "squashfuse", "bwrap"});
      !why.empty()) {
    GTEST_SKIP() << why;
  }
  const std::string image = torchImage();
  ASSERT_NE(image, "");
  CommandResult r = runCommand("env -u SLURM_JOB_ID " + quote(binaryPath("distrun")) +
                               " doctor --format json --checks python --python python3"
                               " --container " +
                               quote(image));
  ASSERT_EQ(r.exitCode, 0) << r.out << r.err;
  json python = pythonResult(r);
  EXPECT_EQ(python.at("state"), "ok") << python;
  EXPECT_THAT(python.at("detail").get<std::string>(), HasSubstr(" in container "));
  EXPECT_NE(python.at("facts").at("torch_version"), "");
}

TEST(DoctorContainerTest, AMissingImageIsRefusedBeforeAnythingRuns) {
  CommandResult r =
      runCommand(quote(binaryPath("distrun")) + " doctor --container /nonexistent/torch.sif");
  EXPECT_EQ(r.exitCode, 66) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("distrun: error: container image /nonexistent/torch.sif"));
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace distrun::testing
