// Fuzzes the site-profile format (distrun/cluster/site_profile.h): any text
// either fails with ConfigError or gives a profile whose match lines can be
// evaluated and whose settings expand against an environment.
#include <string>

#include "distrun/cluster/site_profile.h"
#include "fuzz/fuzz_support.h"

namespace {

void useProfile(const distrun::cluster::SiteProfile& profile) {
  distrun::MapEnvironment env{{"SLURM_CLUSTER_NAME", "lumi"},
                              {"USER", "fuzz"},
                              {"SLURM_NODEID", "0"},
                              {"HOME", "/home/fuzz"}};
  (void)profile.appliesTo(env);
  for (const auto& setting : profile.settings) {
    distrun::fuzz::expectingErrors(
        [&] { (void)distrun::cluster::expandSiteValue(setting.value, env, profile.name); });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(distrun::fuzz::asText(data, size));
  distrun::cluster::SiteProfile profile;
  if (distrun::fuzz::expectingErrors(
          [&] { profile = distrun::cluster::parseSiteProfile(text, "fuzz", "fuzz.site"); })) {
    useProfile(profile);
  }
  return 0;
}
