#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include <functional>
#include "distrun/comm/communicator.h"
#include "distrun/comm/gloo/gloo_communicator.h"
#include "distrun/comm/hierarchical/hierarchical_communicator.h"

namespace distrun::comm::testing {

struct ContractOptions {
  // Element counts per rank (per block for allgather, reduce_scatter and
  // alltoall): 0, 1 and odd ones included.
  std::vector<size_t> counts = {0, 1, 2, 7, 33, 1031};
  // The data types checked: all of them unless a run chooses fewer.
  std::vector<DataType> types{std::begin(kAllDataTypes), std::end(kAllDataTypes)};
};

// The Communicator contract, checked on a live communicator: every
// collective x data type x reduction x count, out-of-place and in-place,
// blocking and asynchronous (queued together, then waited), plus ring
// send/recv and barrier. Every rank of the communicator calls it at the same
// time. Inputs are small integers whose sums and products are exact in every
// type, so integers are compared exactly and floats within a tolerance that
// only avg's rounding needs (float 1e-6, double 1e-12, half 1e-3, bfloat16
// 8e-3, relative). Returns one line per wrong result, empty when all pass.
std::vector<std::string> checkContract(Communicator& comm, const ContractOptions& options = {});

// Runs `body` on every rank of a Gloo world of `size` ranks made of threads
// of this process, meeting through a private store on 127.0.0.1. Returns
// each rank's error ("" when its body returned normally). `nodeOf`, when
// given, names each rank's node (GlooOptions::node), so that one process
// can play several nodes.
std::vector<std::string> runGlooThreads(int size, const std::function<void(Communicator&)>& body,
                                        GlooOptions options = {},
                                        const std::function<std::string(int)>& nodeOf = {});

// The parts of a hierarchical communicator for rank `rank` of `layout`
// (one letter per rank naming its node: "aabb"), all Gloo communicators
// meeting through the store at 127.0.0.1:`port` (token "contract") under
// `prefix`: the world and the leaders' over TCP, each node's in shared
// memory (slots of 256 bytes, so that the contract's counts go in several
// pieces).
HierarchicalParts glooHierarchicalParts(const std::string& layout, int rank, int port,
                                        const std::string& prefix);
// Only the node's part of those (null for a rank alone on its node).
std::unique_ptr<Communicator> glooNodePart(const std::string& layout, int rank, int port,
                                           const std::string& prefix);
// The node layout of `layout`'s letters, as rank `rank` sees it.
NodeLayout letterLayout(const std::string& layout, int rank);

// Runs `body` on every rank of a HierarchicalCommunicator of
// glooHierarchicalParts, ranks as threads; returns each rank's error.
std::vector<std::string> runHierarchicalThreads(const std::string& layout,
                                                const std::function<void(Communicator&)>& body,
                                                HierarchicalOptions options = {});

// `options` with every shared-memory collective that can read its peers
// directly doing so at every size (allgather and alltoall blocks,
// allreduces, broadcasts; and send/recv messages), where every rank can.
GlooOptions readingPeersDirectly(GlooOptions options);

// The names of this process's threads (/proc/self/task/*/comm), so a test
// can see that a thread it expects is alive and named.
std::vector<std::string> threadNames();

}  // namespace distrun::comm::testing
