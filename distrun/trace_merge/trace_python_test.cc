// A Python job's PyTorch profiles merged (label: python; it starts no
// Slurm): `distrun run --nproc-per-node 2` runs
// examples/python/profiled_allreduce.py with DISTRUN_TRACE set, each rank
// writes torch-rank<R>.json, and `distrun trace merge` makes one trace of
// both ranks' events, their all_reduce calls linked, valid against
// share/trace.schema.json.
#include <unistd.h>

#include <filesystem>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "distrun/testing/command.h"

namespace distrun::trace_merge {
namespace {

using distrun::testing::binaryPath;
using distrun::testing::CommandResult;
using distrun::testing::quote;
using distrun::testing::runCommand;
using distrun::testing::slurp;
using distrun::testing::sourcePath;
using ::testing::HasSubstr;

bool canImport(const std::string& module) {
  return runCommand("/usr/bin/python3 -c 'import " + module + "'").exitCode == 0;
}

TEST(TracePythonTest, ARunJobsPyTorchProfilesMergeIntoOneValidTrace) {
  if (!canImport("torch")) GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  const std::string dir = ::testing::TempDir() + "trace_python_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CommandResult job =
      runCommand("DISTRUN_TRACE=" + quote(dir) + " timeout 120 " + quote(binaryPath("distrun")) +
                 " run --nproc-per-node 2 /usr/bin/python3 " +
                 quote(sourcePath("examples/python/profiled_allreduce.py")));
  ASSERT_EQ(job.exitCode, 0) << job.out << job.err;
  EXPECT_THAT(job.out, HasSubstr("profiled_allreduce: rank 1 of 2: all_reduce ok"));

  CommandResult merge = runCommand(quote(binaryPath("distrun")) + " trace merge " + quote(dir));
  ASSERT_EQ(merge.exitCode, 0) << merge.err;
  EXPECT_THAT(merge.err, HasSubstr("2 PyTorch exports"));
  EXPECT_THAT(merge.err, HasSubstr("3 collective pairs linked, 0 with a side missing"));
  const nlohmann::json trace = nlohmann::json::parse(slurp(dir + "/trace.json"));
  std::set<int> ranksWithAllReduce;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["name"] == "gloo:all_reduce") ranksWithAllReduce.insert(e["pid"].get<int>() - 1);
  }
  EXPECT_EQ(ranksWithAllReduce, (std::set<int>{0, 1}));

  if (!canImport("jsonschema")) {
    std::cout << "not checked against the schema: /usr/bin/python3 cannot import jsonschema\n";
  } else {
    CommandResult valid = runCommand(
        "/usr/bin/python3 -c 'import json, sys, jsonschema; jsonschema.validate("
        "json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))' " +
        quote(sourcePath("share/trace.schema.json")) + " " + quote(dir + "/trace.json"));
    EXPECT_EQ(valid.exitCode, 0) << valid.err;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace distrun::trace_merge
