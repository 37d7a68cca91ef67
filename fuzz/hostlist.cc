// Fuzzes the hostlist parser (distrun/cluster/hostlist.h) with any text: a
// list either fails with ConfigError or expands to hosts that
// compressHostlist writes back as a list expanding to the same hosts.
#include <string>
#include <vector>

#include "distrun/cluster/hostlist.h"
#include "fuzz/fuzz_support.h"

namespace {

// compressHostlist's contract holds for names without separators or brackets.
bool plainNames(const std::vector<std::string>& hosts) {
  for (const std::string& host : hosts) {
    if (host.find_first_of(", \t\n[]") != std::string::npos) return false;
  }
  return true;
}

// Expanding a large valid list is slow, not wrong: the round trip is checked
// on lists of a size a job has.
constexpr size_t kMaxHostsChecked = 1 << 16;

void checkRoundTrip(const std::vector<std::string>& hosts) {
  if (!plainNames(hosts) || hosts.size() > kMaxHostsChecked) return;
  std::string compressed = distrun::cluster::compressHostlist(hosts);
  std::vector<std::string> again;
  bool parsed =
      distrun::fuzz::expectingErrors([&] { again = distrun::cluster::expandHostlist(compressed); });
  distrun::fuzz::check(parsed, "compressHostlist wrote a list that does not parse: " + compressed);
  distrun::fuzz::check(again == hosts, "'" + compressed + "' expands to other hosts");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> hosts;
  std::string_view list = distrun::fuzz::asText(data, size);
  if (distrun::fuzz::expectingErrors([&] { hosts = distrun::cluster::expandHostlist(list); })) {
    distrun::fuzz::check(hosts.size() <= distrun::cluster::kMaxHostsInList,
                         "more hosts than kMaxHostsInList");
    checkRoundTrip(hosts);
  }
  return 0;
}
