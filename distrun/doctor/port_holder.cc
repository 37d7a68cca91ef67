// findPortHolder: which process holds a TCP port, read from /proc.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "distrun/common/strings.h"
#include "distrun/doctor/scheduler_checks.h"

namespace distrun::doctor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kListening = "0A";  // TCP_LISTEN in /proc/net/tcp's "st" column

// The port of an address as /proc/net/tcp writes it ("0100007F:1F90"), or -1.
long portOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  char* end = nullptr;
  const long port = std::strtol(address.c_str() + colon + 1, &end, 16);
  return *end == '\0' ? port : -1;
}

// The inodes of the sockets on local `port` in one table (net/tcp,
// net/tcp6), listeners in `listening`, the others in `other`.
void readSockets(const std::string& path, long port, std::vector<std::string>& listening,
                 std::vector<std::string>& other) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // the column names
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode)) {
      continue;
    }
    if (portOf(local) != port || inode == "0") continue;  // 0: no owner (TIME_WAIT)
    (state == kListening ? listening : other).push_back(inode);
  }
}

bool isPid(const std::string& name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
}

// Every socket link of every process that can be seen: "socket:[INODE]" to pid.
// Processes that end while this runs, or hide their fd folder, are passed over.
std::map<std::string, long> socketOwners(const fs::path& procRoot) {
  std::map<std::string, long> owners;
  std::error_code ec;
  for (fs::directory_iterator it(procRoot, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!isPid(name)) continue;
    std::error_code fdEc;
    for (fs::directory_iterator fd(it->path() / "fd", fdEc); !fdEc && fd != end;
         fd.increment(fdEc)) {
      std::error_code linkEc;
      const fs::path target = fs::read_symlink(fd->path(), linkEc);
      if (!linkEc) owners.emplace(target.string(), std::atol(name.c_str()));
    }
  }
  return owners;
}

std::string commandOf(const fs::path& procRoot, long pid) {
  std::ifstream in(procRoot / std::to_string(pid) / "comm");
  std::string name;
  std::getline(in, name);
  return std::string(trim(name));
}

}  // namespace

std::optional<PortHolder> findPortHolder(int port, const std::string& procRoot) {
  try {
    std::vector<std::string> inodes, other;
    for (const char* table : {"net/tcp", "net/tcp6"}) {
      readSockets(procRoot + "/" + table, port, inodes, other);
    }
    inodes.insert(inodes.end(), other.begin(), other.end());
    if (inodes.empty()) return std::nullopt;
    const std::map<std::string, long> owners = socketOwners(procRoot);
    for (const std::string& inode : inodes) {
      auto it = owners.find("socket:[" + inode + "]");
      if (it != owners.end()) return PortHolder{it->second, commandOf(procRoot, it->second)};
    }
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // best effort: the check says the port is taken regardless
  }
}

}  // namespace distrun::doctor
