#include "distrun/binding/node_topology.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "distrun/common/error.h"
#include "distrun/common/strings.h"

namespace distrun::binding {
namespace {

constexpr const char* kForms =
    "expected 'node cpus LIST', 'node reserved-cpus LIST', 'node numa ID cpus LIST' or "
    "'node gpu INDEX numa ID cpus LIST'";

std::vector<std::string> words(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

[[noreturn]] void badLine(std::string_view line, const std::string& where) {
  throw ConfigError(fmt::format("{}: 'node {}': {}", where, trim(line), kForms));
}

bool isSubset(const CpuList& some, const CpuList& all) {
  return std::includes(all.begin(), all.end(), some.begin(), some.end());
}

void addNumaOrGpu(NodeTopology& t, const std::vector<std::string>& w, const std::string& where) {
  int id = static_cast<int>(parseCount(w[1], where + ": the " + w[0] + " number", 1024));
  if (w[0] == "numa" && w.size() == 4 && w[2] == "cpus") {
    t.numaNodes.push_back({id, parseCpuList(w[3], where + ": the NUMA domain's cpus")});
    return;
  }
  if (w[0] == "gpu" && w.size() == 6 && w[2] == "numa" && w[4] == "cpus") {
    int numa = static_cast<int>(parseCount(w[3], where + ": the GPU's NUMA domain", 1024));
    t.gpus.push_back({id, numa, parseCpuList(w[5], where + ": the GPU's cpus")});
    return;
  }
  throw ConfigError(fmt::format("{}: 'node {}': {}", where, join(w, " "), kForms));
}

}  // namespace

CpuList NodeTopology::usableCpus() const { return without(cpus, reserved); }

std::vector<int> NodeTopology::numaOf(const CpuList& some) const {
  std::vector<int> ids;
  for (const Numa& numa : numaNodes) {
    bool holdsAny = without(some, numa.cpus).size() < some.size();
    if (holdsAny) ids.push_back(numa.id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void NodeTopology::validate() const {
  auto fail = [this](const std::string& what) {
    throw ConfigError(fmt::format("the node description from {}: {}", source, what));
  };
  if (cpus.empty()) fail("it lists no cpus (a 'node cpus LIST' line)");
  if (!isSubset(reserved, cpus)) fail("a reserved cpu is not among the node's cpus");
  for (const Numa& numa : numaNodes) {
    if (!isSubset(numa.cpus, cpus))
      fail(fmt::format("NUMA domain {} has cpus the node lacks", numa.id));
  }
  for (const Gpu& gpu : gpus) {
    if (!isSubset(gpu.cpus, cpus)) fail(fmt::format("GPU {} has cpus the node lacks", gpu.index));
    bool known = std::any_of(numaNodes.begin(), numaNodes.end(),
                             [&gpu](const Numa& n) { return n.id == gpu.numa; });
    if (!known)
      fail(fmt::format("GPU {} is on NUMA domain {}, which it does not describe", gpu.index,
                       gpu.numa));
  }
}

void addTopologyLine(NodeTopology& topology, std::string_view line, const std::string& where) {
  std::vector<std::string> w = words(line);
  if (w.size() == 2 && w[0] == "cpus") {
    topology.cpus = parseCpuList(w[1], where + ": the node's cpus");
  } else if (w.size() == 2 && w[0] == "reserved-cpus") {
    topology.reserved = parseCpuList(w[1], where + ": the reserved cpus");
  } else if (w.size() >= 4 && (w[0] == "numa" || w[0] == "gpu")) {
    addNumaOrGpu(topology, w, where);
  } else {
    badLine(line, where);
  }
}

}  // namespace distrun::binding
