#include "distrun/comm/testing/contract.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "distrun/comm/check_values.h"

namespace distrun::comm::testing {

namespace {

// One operation's buffers, what to run, and what the result must be.
struct Case {
  std::string what;
  DataType type = DataType::kFloat32;
  std::vector<char> input;
  std::vector<char> output;
  char* result = nullptr;        // where the result lands
  std::vector<double> expected;  // per element of the result
  std::function<Work(bool async)> run;
  Work work;

  void allocate(size_t inputElements, size_t outputElements) {
    input.assign(inputElements * sizeOf(type) + 1, 0);
    output.assign(outputElements * sizeOf(type) + 1, 0);
  }
};

class Checker {
 public:
  Checker(Communicator& comm, const ContractOptions& options)
      : comm_(comm), options_(options), rank_(comm.rank()), size_(comm.size()) {}

  std::vector<std::string> run() {
    reducible_ = comm_.allocateReducible(reducibleBytes());
    for (bool async : {false, true}) {
      for (DataType t : options_.types) {
        for (bool inPlace : {false, true}) {
          for (size_t count : options_.counts) {
            addReductions(t, count, inPlace);
            addMovements(t, count, inPlace);
          }
        }
        for (size_t count : reducibleCounts()) {
          for (ReduceOp op : kAllReduceOps) addReducibleAllreduce(t, op, count);
        }
        flush(async);
      }
      addSendRecv(async);
      comm_.barrier();
      if (async) comm_.barrierAsync().wait();
    }
    return failures_;
  }

 private:
  void addReductions(DataType t, size_t count, bool inPlace) {
    for (ReduceOp op : kAllReduceOps) {
      addAllreduce(t, op, count, inPlace);
      addReduceScatter(t, op, count, inPlace);
    }
  }

  void addMovements(DataType t, size_t count, bool inPlace) {
    addBroadcast(t, count, inPlace, 0);
    if (size_ > 1) addBroadcast(t, count, inPlace, size_ - 1);
    addAllgather(t, count, inPlace);
    addAlltoall(t, count, inPlace);
  }

  Case& add(std::string what, DataType t, bool inPlace) {
    cases_.push_back(std::make_unique<Case>());
    Case& c = *cases_.back();
    c.what = fmt::format("{} {} {}", what, nameOf(t), inPlace ? "in-place" : "out-of-place");
    c.type = t;
    return c;
  }

  void addAllreduce(DataType t, ReduceOp op, size_t n, bool inPlace) {
    Case& c = add(fmt::format("allreduce {} count {}", nameOf(op), n), t, inPlace);
    c.allocate(n, n);
    for (size_t i = 0; i < n; ++i) {
      storeValue(t, c.input.data(), i, reductionInput(op, rank_, size_, i));
      c.expected.push_back(reductionResult(op, t, size_, i));
    }
    char* out = inPlace ? c.input.data() : c.output.data();
    c.result = out;
    c.run = [&c, out, n, t, op, this](bool async) {
      if (async) return comm_.allreduceAsync(c.input.data(), out, n, t, op);
      comm_.allreduce(c.input.data(), out, n, t, op);
      return Work();
    };
  }

  // In-place allreduces in allocateReducible's memory (shared among the
  // ranks with the Gloo backend on one host), each case off the cache-line
  // grid; a larger count spans several of the reducer's blocks.
  std::vector<size_t> reducibleCounts() const {
    std::vector<size_t> counts = options_.counts;
    counts.push_back(10007);
    return counts;
  }

  size_t reducibleBytes() const {
    size_t elements = 0;
    for (size_t n : reducibleCounts()) elements += n + 1;
    return std::size(kAllReduceOps) * elements * sizeof(double);
  }

  void addReducibleAllreduce(DataType t, ReduceOp op, size_t n) {
    Case& c = add(fmt::format("allreduce {} count {} in reducible memory", nameOf(op), n), t,
                  /*inPlace=*/true);
    reducibleUsed_ += sizeOf(t);
    char* data = static_cast<char*>(reducible_.get()) + reducibleUsed_;
    reducibleUsed_ += n * sizeOf(t);
    for (size_t i = 0; i < n; ++i) {
      storeValue(t, data, i, reductionInput(op, rank_, size_, i));
      c.expected.push_back(reductionResult(op, t, size_, i));
    }
    c.result = data;
    c.run = [data, n, t, op, this](bool async) {
      if (async) return comm_.allreduceAsync(data, data, n, t, op);
      comm_.allreduce(data, data, n, t, op);
      return Work();
    };
  }

  void addReduceScatter(DataType t, ReduceOp op, size_t n, bool inPlace) {
    Case& c = add(fmt::format("reduce_scatter {} count {}", nameOf(op), n), t, inPlace);
    const size_t total = n * static_cast<size_t>(size_);
    c.allocate(total, n);
    for (size_t i = 0; i < total; ++i) {
      storeValue(t, c.input.data(), i, reductionInput(op, rank_, size_, i));
    }
    for (size_t i = 0; i < n; ++i) {
      c.expected.push_back(reductionResult(op, t, size_, n * static_cast<size_t>(rank_) + i));
    }
    char* out =
        inPlace ? c.input.data() + n * sizeOf(t) * static_cast<size_t>(rank_) : c.output.data();
    c.result = out;
    c.run = [&c, out, n, t, op, this](bool async) {
      if (async) return comm_.reduceScatterAsync(c.input.data(), out, n, t, op);
      comm_.reduceScatter(c.input.data(), out, n, t, op);
      return Work();
    };
  }

  void addBroadcast(DataType t, size_t n, bool inPlace, int root) {
    Case& c = add(fmt::format("broadcast root {} count {}", root, n), t, inPlace);
    c.allocate(n, n);
    for (size_t i = 0; i < n; ++i) {
      storeValue(t, c.input.data(), i, markerValue(rank_, i));
      c.expected.push_back(markerValue(root, i));
    }
    char* out = inPlace ? c.input.data() : c.output.data();
    c.result = out;
    c.run = [&c, out, n, t, root, this](bool async) {
      if (async) return comm_.broadcastAsync(c.input.data(), out, n, t, root);
      comm_.broadcast(c.input.data(), out, n, t, root);
      return Work();
    };
  }

  void addAllgather(DataType t, size_t n, bool inPlace) {
    Case& c = add(fmt::format("allgather count {}", n), t, inPlace);
    const size_t total = n * static_cast<size_t>(size_);
    c.allocate(n, total);
    const char* in = c.input.data();
    if (inPlace) in = c.output.data() + n * sizeOf(t) * static_cast<size_t>(rank_);
    for (size_t i = 0; i < n; ++i) {
      storeValue(t, const_cast<char*>(in), i, markerValue(rank_, i));
    }
    for (int r = 0; r < size_; ++r) {
      for (size_t i = 0; i < n; ++i) c.expected.push_back(markerValue(r, i));
    }
    c.result = c.output.data();
    c.run = [&c, in, n, t, this](bool async) {
      if (async) return comm_.allgatherAsync(in, c.output.data(), n, t);
      comm_.allgather(in, c.output.data(), n, t);
      return Work();
    };
  }

  void addAlltoall(DataType t, size_t n, bool inPlace) {
    Case& c = add(fmt::format("alltoall count {}", n), t, inPlace);
    const size_t total = n * static_cast<size_t>(size_);
    c.allocate(total, total);
    // Block j of rank r's input carries (r, j): rank j must receive it.
    for (int j = 0; j < size_; ++j) {
      for (size_t i = 0; i < n; ++i) {
        storeValue(t, c.input.data(), static_cast<size_t>(j) * n + i,
                   markerValue(rank_, static_cast<size_t>(j) * 7 + i));
      }
    }
    for (int r = 0; r < size_; ++r) {
      for (size_t i = 0; i < n; ++i) {
        c.expected.push_back(markerValue(r, static_cast<size_t>(rank_) * 7 + i));
      }
    }
    char* out = inPlace ? c.input.data() : c.output.data();
    c.result = out;
    c.run = [&c, out, n, t, this](bool async) {
      if (async) return comm_.alltoallAsync(c.input.data(), out, n, t);
      comm_.alltoall(c.input.data(), out, n, t);
      return Work();
    };
  }

  // Ring exchanges: blocking send/recv ordered by rank parity, and
  // sendRecv (blocking or asynchronous) on two tags.
  void addSendRecv(bool async) {
    if (size_ == 1) return;
    const int next = (rank_ + 1) % size_;
    const int previous = (rank_ + size_ - 1) % size_;
    for (DataType t : options_.types) {
      for (size_t n : options_.counts) {
        std::vector<char> a(n * sizeOf(t) + 1), b(n * sizeOf(t) + 1);
        std::vector<char> ra(a.size()), rb(b.size());
        for (size_t i = 0; i < n; ++i) {
          storeValue(t, a.data(), i, markerValue(rank_, i));
          storeValue(t, b.data(), i, markerValue(rank_, i + 1));
        }
        try {
          exchange(async, a.data(), ra.data(), b.data(), rb.data(), n, t, next, previous);
        } catch (const std::exception& e) {
          record(fmt::format("rank {}: send/recv {} count {}: threw: {}", rank_, nameOf(t), n,
                             e.what()));
          continue;
        }
        for (size_t i = 0; i < n; ++i) {
          compare(fmt::format("send/recv {} count {}", nameOf(t), n), t, loadValue(t, ra.data(), i),
                  markerValue(previous, i), i);
          compare(fmt::format("sendrecv {} count {}", nameOf(t), n), t, loadValue(t, rb.data(), i),
                  markerValue(previous, i + 1), i);
        }
      }
    }
  }

  void exchange(bool async, const char* a, char* ra, const char* b, char* rb, size_t n, DataType t,
                int next, int previous) {
    if (!async) {
      if (rank_ % 2 == 0) {
        comm_.send(a, n, t, next, 1);
        comm_.recv(ra, n, t, previous, 1);
      } else {
        comm_.recv(ra, n, t, previous, 1);
        comm_.send(a, n, t, next, 1);
      }
      comm_.sendRecv(b, next, rb, previous, n, t, 2);
      return;
    }
    Work first =
        rank_ % 2 == 0 ? comm_.sendAsync(a, n, t, next, 1) : comm_.recvAsync(ra, n, t, previous, 1);
    Work second =
        rank_ % 2 == 0 ? comm_.recvAsync(ra, n, t, previous, 1) : comm_.sendAsync(a, n, t, next, 1);
    Work third = comm_.sendRecvAsync(b, next, rb, previous, n, t, 2);
    third.wait();
    first.wait();
    second.wait();
  }

  // Runs every case (asynchronous ones all queued before the first wait),
  // then checks each result.
  void flush(bool async) {
    std::vector<std::string> errors(cases_.size());
    for (size_t k = 0; k < cases_.size(); ++k) {
      try {
        cases_[k]->work = cases_[k]->run(async);
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
    }
    for (size_t k = 0; k < cases_.size(); ++k) {
      Case& c = *cases_[k];
      try {
        if (errors[k].empty()) c.work.wait();
      } catch (const std::exception& e) {
        errors[k] = e.what();
      }
      if (!errors[k].empty()) {
        record(fmt::format("rank {}: {}: threw: {}", rank_, c.what, errors[k]));
        continue;
      }
      for (size_t i = 0; i < c.expected.size(); ++i) {
        compare(c.what + (async ? " async" : ""), c.type, loadValue(c.type, c.result, i),
                c.expected[i], i);
      }
    }
    cases_.clear();
    reducibleUsed_ = 0;
  }

  void compare(const std::string& what, DataType t, double got, double want, size_t i) {
    if (matches(t, got, want)) return;
    record(fmt::format("rank {}: {}: element {} is {}, expected {}", rank_, what, i, got, want));
  }

  void record(std::string line) {
    if (failures_.size() < 50) failures_.push_back(std::move(line));
  }

  Communicator& comm_;
  const ContractOptions& options_;
  const int rank_;
  const int size_;
  std::vector<std::unique_ptr<Case>> cases_;
  std::vector<std::string> failures_;
  std::shared_ptr<void> reducible_;
  size_t reducibleUsed_ = 0;  // bytes of reducible_ the cases so far took
};

}  // namespace

std::vector<std::string> checkContract(Communicator& comm, const ContractOptions& options) {
  return Checker(comm, options).run();
}

GlooOptions readingPeersDirectly(GlooOptions options) {
  options.sharedDirectFromBytes = 0;
  options.sharedDirectAllreduceFromBytes = 0;
  options.sharedDirectAllreduceBelowBytes = SIZE_MAX;
  options.sharedDirectBroadcastFromBytes = 0;
  options.sharedDirectBroadcastBelowBytes = SIZE_MAX;
  return options;
}

std::vector<std::string> runGlooThreads(int size, const std::function<void(Communicator&)>& body,
                                        GlooOptions options,
                                        const std::function<std::string(int)>& nodeOf) {
  static int worlds = 0;
  const std::string prefix = fmt::format("threads/{}", worlds++);
  rdzv::StoreServer server("127.0.0.1", 0, "contract");
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto client = std::make_unique<rdzv::StoreClient>("127.0.0.1", server.port(), "contract",
                                                          options.timeout);
        GlooOptions mine = options;
        if (nodeOf) mine.node = nodeOf(r);
        GlooCommunicator comm(r, size, std::move(client), prefix, std::move(mine));
        body(comm);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

NodeLayout letterLayout(const std::string& layout, int rank) {
  std::vector<std::string> nodes;
  for (char c : layout) nodes.emplace_back(1, c);
  return NodeLayout(nodes, rank);
}

namespace {

std::unique_ptr<Communicator> glooPart(int rank, int size, int port, const std::string& prefix,
                                       bool sharedMemory) {
  GlooOptions options;
  options.sharedMemory = sharedMemory;
  options.sharedSlotBytes = 256;
  options.node = "one";
  auto client = std::make_unique<rdzv::StoreClient>("127.0.0.1", port, "contract", options.timeout);
  return std::make_unique<GlooCommunicator>(rank, size, std::move(client), prefix, options);
}

}  // namespace

std::unique_ptr<Communicator> glooNodePart(const std::string& layout, int rank, int port,
                                           const std::string& prefix) {
  const NodeLayout nodes = letterLayout(layout, rank);
  if (nodes.neighbours().size() == 1) return nullptr;
  return glooPart(nodes.localRank(), static_cast<int>(nodes.neighbours().size()), port,
                  fmt::format("{}/node/{}", prefix, nodes.node()), /*sharedMemory=*/true);
}

HierarchicalParts glooHierarchicalParts(const std::string& layout, int rank, int port,
                                        const std::string& prefix) {
  const NodeLayout nodes = letterLayout(layout, rank);
  HierarchicalParts parts;
  parts.world = glooPart(rank, static_cast<int>(layout.size()), port, prefix + "/world",
                         /*sharedMemory=*/false);
  parts.node = glooNodePart(layout, rank, port, prefix);
  if (nodes.isLeader()) {
    parts.leaders =
        glooPart(nodes.node(), nodes.nodes(), port, prefix + "/leaders", /*sharedMemory=*/false);
  }
  return parts;
}

std::vector<std::string> runHierarchicalThreads(const std::string& layout,
                                                const std::function<void(Communicator&)>& body,
                                                HierarchicalOptions options) {
  static int worlds = 0;
  const std::string prefix = fmt::format("hierarchical/{}", worlds++);
  rdzv::StoreServer server("127.0.0.1", 0, "contract");
  const int size = static_cast<int>(layout.size());
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        HierarchicalCommunicator comm(letterLayout(layout, r),
                                      glooHierarchicalParts(layout, r, server.port(), prefix),
                                      options);
        body(comm);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

std::vector<std::string> threadNames() {
  std::vector<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.push_back(name);
  }
  return names;
}

}  // namespace distrun::comm::testing
