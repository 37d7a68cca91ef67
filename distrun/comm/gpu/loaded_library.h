#pragma once

// A shared library opened at run time (dlopen), for the GPU libraries distrun
// does not link: NCCL or RCCL, and the CUDA or HIP runtime (docs/comm.md,
// "NCCL and RCCL"). The handle is never closed: the library's threads and
// atexit handlers may outlive any one user.

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace distrun::comm::gpu {

class LoadedLibrary {
 public:
  // The first of `candidates` that dlopen loads (a name the loader searches
  // for, or a path). Throws ConfigError "`what` could not be loaded (tried
  // A, B: <the loader's reason for the first>); `hint`".
  static LoadedLibrary open(const std::vector<std::string>& candidates, const std::string& what,
                            const std::string& hint);

  // The file loaded: the candidate that worked.
  const std::string& name() const { return name_; }

  // The address of `symbol`. Throws ConfigError naming the library and the
  // symbol when it has none (an older or a different library).
  void* symbol(const char* symbol) const;

  // Typed: fills `pointer` with `symbol`'s address.
  template <class Function>
  void bind(Function*& pointer, const char* symbol) const {
    pointer = reinterpret_cast<Function*>(this->symbol(symbol));
  }

 private:
  LoadedLibrary(void* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  void* handle_;
  std::string name_;
};

// The table `bind` makes of the first of `candidates` that loads, made once
// a process for each list of candidates and kept (thread-safe): what the
// GPU runtime's and NCCL's loaders share. `open` is LoadedLibrary::open's
// what and hint.
template <class Table, class Bind>
const Table& loadOnce(const std::vector<std::string>& candidates, const std::string& what,
                      const std::string& hint, Bind bind) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, Table> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(candidates);
  if (it != loaded.end()) return it->second;
  return loaded.emplace(candidates, bind(LoadedLibrary::open(candidates, what, hint)))
      .first->second;
}

}  // namespace distrun::comm::gpu
