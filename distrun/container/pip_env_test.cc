#include "distrun/container/pip_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "distrun/common/environment.h"
#include "distrun/common/error.h"

namespace distrun::container {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Argv = std::vector<std::string>;

TEST(PipArgumentTest, FilesAreTxtYmlOrPathsAndTheRestRequirements) {
  EXPECT_EQ(classifyPipArgument("six==1.16.0").kind, PipSource::Kind::kRequirement);
  EXPECT_EQ(classifyPipArgument("torch==2.6.0+rocm6.2.4").kind, PipSource::Kind::kRequirement);
  EXPECT_EQ(classifyPipArgument("https://example.org/a-1.0-py3-none-any.whl").kind,
            PipSource::Kind::kRequirement);
  PipSource file = classifyPipArgument("/h/requirements.txt");
  EXPECT_EQ(file.kind, PipSource::Kind::kRequirementsFile);
  EXPECT_EQ(file.text, "/h/requirements.txt");
  EXPECT_EQ(classifyPipArgument("./reqs").kind, PipSource::Kind::kRequirementsFile);
  EXPECT_EQ(classifyPipArgument("env.yml").kind, PipSource::Kind::kCondaEnvFile);
  EXPECT_EQ(classifyPipArgument("/h/env.yaml").kind, PipSource::Kind::kCondaEnvFile);
  EXPECT_EQ(classifyPipArgument("env.yml").text.front(), '/');  // made absolute
}

// The LUMI guide's environment file: conda-forge channels, python and pip
// from conda, PyTorch for ROCm from pip.
constexpr const char* kLumiEnv = R"(name: pytorch_rocm
channels:
  - conda-forge
  - defaults
dependencies:
  - python=3.11   # the image's own
  - pip
  - pip:
    - --extra-index-url https://download.pytorch.org/whl/rocm6.2.4
    - "torch==2.6.0+rocm6.2.4"
    - -r more.txt
    - -r /abs/other.txt
)";

TEST(CondaEnvTest, ThePipListIsTakenAndPythonAndPipAreTheImagesOwn) {
  EXPECT_THAT(
      condaEnvPipLines(kLumiEnv, "/h/env.yml", "/tmp/inputs/0"),
      ElementsAre("--extra-index-url https://download.pytorch.org/whl/rocm6.2.4",
                  "torch==2.6.0+rocm6.2.4", "-r /tmp/inputs/0/more.txt", "-r /abs/other.txt"));
}

TEST(CondaEnvTest, ACondaPackageIsRefusedNamingItsLine) {
  const std::string text = "dependencies:\n  - python=3.11\n  - numpy=1.26\n  - pip:\n    - six\n";
  try {
    condaEnvPipLines(text, "/h/env.yml", ".");
    FAIL() << "numpy from conda was taken";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/h/env.yml:3: conda package 'numpy=1.26' cannot be installed: distrun wrap fills "
              "the image's environment from PyPI with pip and reaches no conda channel; list it "
              "under '- pip:' as a PyPI requirement, or take Debian's with --apt");
    EXPECT_EQ(e.exitCode(), ExitCode::kData);
  }
}

TEST(CondaEnvTest, AFileWithoutAPipListIsRefused) {
  try {
    condaEnvPipLines("name: x\ndependencies:\n  - python\n", "/h/env.yml", ".");
    FAIL() << "nothing to install was taken";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/h/env.yml: has no '- pip:' list under dependencies"));
  }
  EXPECT_THROW(condaEnvPipLines("dependencies:\n  python\n", "/h/e.yml", "."), DataError);
}

TEST(PipCommandTest, FilesAndWheelhousesAreBoundOutsideTheImagesTree) {
  std::vector<PipBind> binds;
  Argv args = pipInstallArguments({{PipSource::Kind::kRequirementsFile, "/h/p/requirements.txt"},
                                   {PipSource::Kind::kRequirement, "six==1.16.0"},
                                   {PipSource::Kind::kCondaEnvFile, "/h/c/env.yml"}},
                                  {"/h/wheels", "https://example.org/links"}, true, binds);
  EXPECT_EQ(args, (Argv{"-r", "/tmp/inputs/0/requirements.txt", "six==1.16.0", "-r",
                        "/tmp/conda-2.txt", "--find-links", "/tmp/links/0", "--find-links",
                        "https://example.org/links", "--no-index"}));
  ASSERT_EQ(binds.size(), 3u);
  EXPECT_EQ(binds[0].host, "/h/p");
  EXPECT_EQ(binds[0].inSandbox, "/tmp/inputs/0");
  EXPECT_EQ(binds[1].host, "/h/c");
  EXPECT_EQ(binds[2].host, "/h/wheels");
}

TEST(PipCommandTest, TheSandboxHasACleanEnvironmentAndTheCacheOutside) {
  Argv argv = pipSandboxCommand("/s/root", {"/s/pip", "/home/u/.cache/pip", "/etc/ca.pem"},
                                {{"/h/wheels", "/tmp/links/0"}}, {"PIP_INDEX_URL=https://m/simple"},
                                {"/opt/env/bin/python", "-m", "pip", "freeze"});
  const std::string line = [&] {
    std::string all;
    for (const std::string& a : argv) all += a + " ";
    return all;
  }();
  EXPECT_EQ(argv.front(), "bwrap");
  EXPECT_THAT(line, HasSubstr("--bind /s/root / "));
  EXPECT_THAT(line, HasSubstr("--bind /s/pip /tmp "));
  EXPECT_THAT(line, HasSubstr("--bind /home/u/.cache/pip /tmp/.pip-cache "));
  EXPECT_THAT(line, HasSubstr("--ro-bind /etc/ca.pem /tmp/.pip-ca-bundle.pem "));
  EXPECT_THAT(line, HasSubstr("--ro-bind /h/wheels /tmp/links/0 "));
  EXPECT_THAT(line,
              HasSubstr("--clearenv --setenv PATH /opt/env/bin:/usr/local/bin:/usr/bin:/bin "));
  EXPECT_THAT(line, HasSubstr("--setenv PIP_INDEX_URL https://m/simple "));
  EXPECT_THAT(line, HasSubstr("--setenv PIP_CACHE_DIR /tmp/.pip-cache "));
  EXPECT_THAT(line, HasSubstr("--setenv PIP_CERT /tmp/.pip-ca-bundle.pem "));
  EXPECT_THAT(line, HasSubstr("-- /opt/env/bin/python -m pip freeze "));
  Argv uncached = pipSandboxCommand("/s/root", {"/s/pip", ""}, {}, {}, {"true"});
  EXPECT_NE(std::find(uncached.begin(), uncached.end(), "PIP_NO_CACHE_DIR"), uncached.end());
}

TEST(PipCommandTest, TheHostsPipVariablesPassButThoseNamingHostPaths) {
  MapEnvironment env{{"PIP_INDEX_URL", "https://m/simple"},
                     {"PIP_FIND_LINKS", "/opt/wheels"},
                     {"PIP_CERT", "/etc/ca.pem"},
                     {"https_proxy", "http://p:3128"},
                     {"PYTHONPATH", "/h/lib"},
                     {"PIP_CACHE_DIR", "/h/c"}};
  EXPECT_THAT(passedPipVariables(env),
              ElementsAre("PIP_INDEX_URL=https://m/simple", "https_proxy=http://p:3128"));
}

TEST(PipCommandTest, TheCacheIsPipsOwnChoiceOnTheHost) {
  EXPECT_EQ(hostPipCache(MapEnvironment{{"HOME", "/home/u"}}), "/home/u/.cache/pip");
  EXPECT_EQ(hostPipCache(MapEnvironment{{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/x"}}), "/x/pip");
  EXPECT_EQ(hostPipCache(MapEnvironment{{"PIP_CACHE_DIR", "/c"}, {"XDG_CACHE_HOME", "/x"}}), "/c");
  EXPECT_EQ(hostPipCache(MapEnvironment{{"HOME", "/home/u"}, {"PIP_NO_CACHE_DIR", "1"}}), "");
  EXPECT_EQ(hostPipCert(MapEnvironment{{"PIP_CERT", "/no/such/file"}}), "");
}

TEST(PipFailureTest, PipsOwnLineNamesTheRequirement) {
  const std::string missing =
      "Collecting no-such-package-distrun\n"
      "ERROR: Could not find a version that satisfies the requirement no-such-package-distrun "
      "(from versions: none)\n"
      "ERROR: No matching distribution found for no-such-package-distrun\n";
  EXPECT_EQ(pipFailureReason(missing),
            "Could not find a version that satisfies the requirement no-such-package-distrun "
            "(from versions: none)");
  const std::string otherPython =
      "ERROR: Ignored the following versions that require a different python version: 2.0 "
      "Requires-Python >=3.12\n"
      "ERROR: Could not find a version that satisfies the requirement pkg==2.0 (from versions: "
      "1.0)\n";
  EXPECT_EQ(pipFailureReason(otherPython),
            "Could not find a version that satisfies the requirement pkg==2.0 (from versions: "
            "1.0); Ignored the following versions that require a different python version: 2.0 "
            "Requires-Python >=3.12");
  EXPECT_EQ(pipFailureReason("ERROR: Invalid requirement: 'six=='\n"),
            "Invalid requirement: 'six=='");
  EXPECT_EQ(pipFailureReason("Traceback (most recent call last):\n  File x\n"), "");
}

TEST(PipProgressTest, TheLastLinePipPrinted) {
  EXPECT_EQ(lastPipLine("Collecting six==1.16.0\n  Downloading six-1.16.0-py2.py3-none-any.whl "
                        "(11 kB)\n\n"),
            "Downloading six-1.16.0-py2.py3-none-any.whl (11 kB)");
  EXPECT_EQ(lastPipLine(""), "");
}

TEST(LabelsTest, MergedIntoTheBasesAndListedAsRequirements) {
  const std::string merged = mergedLabels(
      R"({"org.label-schema.schema-version": "1.0", "org.distrun.wrap.apt": "python3"})",
      {{kPythonEnvLabel, "/opt/env"}, {kPipFreezeLabel, "six==1.16.0\n"}});
  EXPECT_THAT(merged, HasSubstr(R"("org.label-schema.schema-version": "1.0")"));
  EXPECT_EQ(describeLabels("/i/env.sif", merged),
            "# /i/env.sif: built by distrun wrap\n"
            "# --apt python3\n"
            "# /opt/env (pip freeze):\n"
            "six==1.16.0\n");
  EXPECT_THAT(mergedLabels("not json", {{kAptLabel, "a"}}), HasSubstr(R"("org.distrun.wrap.apt")"));
  EXPECT_THROW(describeLabels("/i/x.sif", "[1]"), DataError);
  try {
    describeLabels("/i/x.sif", R"({"org.label-schema.schema-version": "1.0"})");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "/i/x.sif: its labels (/.singularity.d/labels.json) list nothing distrun wrap "
              "installed: it was not built with distrun wrap --apt or --pip");
  }
}

}  // namespace
}  // namespace distrun::container
