#include "distrun/doctor/network_check.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

#include <fmt/format.h>

#include "distrun/common/strings.h"
#include "distrun/doctor/checks.h"
#include "distrun/doctor/node_facts.h"

namespace distrun::doctor {
namespace {

NetInterface& entryFor(std::vector<NetInterface>& all, const std::string& name) {
  for (NetInterface& i : all) {
    if (i.name == name) return i;
  }
  all.push_back(NetInterface{name, false, false, false, {}});
  return all.back();
}

std::string numericAddress(const sockaddr* address) {
  char host[NI_MAXHOST] = {};
  socklen_t size = address->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (::getnameinfo(address, size, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return "";
  return host;
}

std::string stateOf(const NetInterface& i) {
  if (!i.up) return "down";
  if (!i.running) return "no link";
  if (i.addresses.empty()) return "no address";
  return "up";
}

std::string listing(const std::vector<NetInterface>& interfaces) {
  std::vector<std::string> parts;
  for (const NetInterface& i : interfaces) parts.push_back(i.name + " (" + stateOf(i) + ")");
  return parts.empty() ? "no interface" : join(parts, ", ");
}

// The usable interfaces to suggest: those that are not loopback, or the
// loopback ones when nothing else is usable (a single machine).
std::vector<std::string> suggestions(const std::vector<NetInterface>& interfaces) {
  std::vector<std::string> names, loopback;
  for (const NetInterface& i : interfaces) {
    if (!i.usable()) continue;
    (i.loopback ? loopback : names).push_back(i.name);
  }
  return names.empty() ? loopback : names;
}

std::string siteRemark(const std::string& site, const std::string& variable) {
  if (site.empty()) return "";
  return fmt::format(
      " (the site profile {} sets it: correct its `set {}` line, or choose "
      "another profile with --site)",
      site, variable);
}

std::string setFix(const std::string& variable, const std::vector<NetInterface>& interfaces,
                   const std::string& site) {
  std::vector<std::string> names = suggestions(interfaces);
  std::string choice =
      names.empty() ? "an interface that is up on every node" : "one of " + join(names, ", ");
  return fmt::format("set {} to {}{}", variable, choice, siteRemark(site, variable));
}

std::vector<Finding> ncclFindings(const std::vector<NetInterface>& interfaces,
                                  const std::string& value, const std::string& site) {
  IfnameFilter filter = parseNcclIfname(value);
  std::string fix = setFix("NCCL_SOCKET_IFNAME", interfaces, site);
  std::vector<std::string> chosen;
  for (const NetInterface& i : interfaces) {
    if (i.usable() && filter.matches(i.name) != filter.exclude) {
      chosen.push_back(i.name);
    }
  }
  std::string head = "NCCL_SOCKET_IFNAME=" + value;
  if (chosen.empty()) {
    return {
        {CheckState::kFail,
         head + (filter.exclude ? " leaves no usable interface" : " matches no usable interface"),
         fix}};
  }
  std::vector<Finding> found{{CheckState::kOk, head + ": NCCL uses " + join(chosen, ", "), ""}};
  for (const std::string& name : filter.exclude ? std::vector<std::string>{} : filter.names) {
    IfnameFilter one{false, filter.exact, {name}};
    bool any = std::any_of(interfaces.begin(), interfaces.end(), [&one](const NetInterface& i) {
      return i.usable() && one.matches(i.name);
    });
    if (any) continue;
    found.push_back({CheckState::kWarn,
                     fmt::format("{}: {} matches no usable interface (NCCL uses {})", head, name,
                                 join(chosen, ", ")),
                     fix});
  }
  return found;
}

std::vector<Finding> glooFindings(const std::vector<NetInterface>& interfaces,
                                  const std::string& value, const std::string& site) {
  std::vector<std::string> names;
  for (const std::string& name : split(value, ',')) {
    if (!trim(name).empty()) names.emplace_back(trim(name));
  }
  std::string head = "GLOO_SOCKET_IFNAME=" + value;
  std::string fix = setFix("GLOO_SOCKET_IFNAME", interfaces, site);
  std::vector<Finding> found;
  for (const std::string& name : names) {
    auto it = std::find_if(interfaces.begin(), interfaces.end(),
                           [&name](const NetInterface& i) { return i.name == name; });
    if (it == interfaces.end()) {
      found.push_back({CheckState::kFail, head + ": the node has no interface " + name, fix});
    } else if (!it->usable()) {
      found.push_back(
          {CheckState::kFail, fmt::format("{}: {} is {}", head, name, stateOf(*it)), fix});
    }
  }
  if (names.size() > 1) {
    found.push_back({CheckState::kWarn,
                     fmt::format("{} names {}: PyTorch spreads over them, but distrun train and "
                                 "distrun bench take one name",
                                 head, names.size()),
                     "name one interface in GLOO_SOCKET_IFNAME for distrun train and bench"});
  }
  if (found.empty())
    found.push_back({CheckState::kOk, head + ": Gloo uses " + join(names, ", "), ""});
  return found;
}

}  // namespace

bool IfnameFilter::matches(const std::string& interface) const {
  return std::any_of(names.begin(), names.end(), [&](const std::string& name) {
    return exact ? interface == name : interface.rfind(name, 0) == 0;
  });
}

IfnameFilter parseNcclIfname(const std::string& value) {
  IfnameFilter filter;
  std::string_view rest = trim(value);
  if (!rest.empty() && rest.front() == '^') {
    filter.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    filter.exact = true;
    rest.remove_prefix(1);
  }
  for (const std::string& item : split(rest, ',')) {
    std::string name(trim(item.substr(0, item.find(':'))));
    if (!name.empty()) filter.names.push_back(name);
  }
  return filter;
}

std::vector<NetInterface> readInterfaces() {
  std::vector<NetInterface> all;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return all;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    NetInterface& i = entryFor(all, a->ifa_name);
    i.up = (a->ifa_flags & IFF_UP) != 0;
    i.running = (a->ifa_flags & IFF_RUNNING) != 0;
    i.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    bool ip =
        a->ifa_addr && (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6);
    if (ip) i.addresses.push_back(numericAddress(a->ifa_addr));
  }
  ::freeifaddrs(list);
  std::sort(all.begin(), all.end(),
            [](const NetInterface& a, const NetInterface& b) { return a.name < b.name; });
  return all;
}

CheckResult judgeNetwork(const std::vector<NetInterface>& interfaces, const NetworkSettings& s) {
  std::vector<Finding> found;
  bool nccl = s.ncclIfname && !trim(*s.ncclIfname).empty();
  bool gloo = s.glooIfname && !trim(*s.glooIfname).empty();
  if (nccl) {
    for (Finding& f : ncclFindings(interfaces, *s.ncclIfname, s.ncclSite)) found.push_back(f);
  }
  if (gloo) {
    for (Finding& f : glooFindings(interfaces, *s.glooIfname, s.glooSite)) found.push_back(f);
  }
  std::vector<std::string> usable = suggestions(interfaces);
  if (!nccl && !gloo) {
    found.push_back({CheckState::kOk,
                     "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME unset: NCCL and Gloo choose "
                     "the interface themselves, among " +
                         (usable.empty() ? std::string("none usable") : join(usable, ", ")),
                     ""});
  }
  CheckResult result = combine("network", found);
  if (result.state == CheckState::kWarn || result.state == CheckState::kFail) {
    result.detail += "; the node has " + listing(interfaces);
  }
  result.values["usable_interfaces"] = static_cast<double>(usable.size());
  result.facts["interfaces"] = join(usable, ",");
  return result;
}

CheckResult checkNetwork(const ProbeContext& ctx) {
  NetworkSettings s{ctx.env.get("NCCL_SOCKET_IFNAME"), ctx.env.get("GLOO_SOCKET_IFNAME"), "", ""};
  if (ctx.site) {
    for (const cluster::SiteProfile::Setting& setting : ctx.site->settings) {
      if (setting.variable == "NCCL_SOCKET_IFNAME") s.ncclSite = ctx.site->name;
      if (setting.variable == "GLOO_SOCKET_IFNAME") s.glooSite = ctx.site->name;
    }
  }
  return judgeNetwork(readInterfaces(), s);
}

}  // namespace distrun::doctor
