#include "distrun/comm/gloo/gloo_communicator.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include "distrun/comm/gloo/store_adapter.h"
#include "distrun/common/error.h"
#include "distrun/common/sigpipe.h"
#include "distrun/common/system.h"

namespace distrun::comm {

namespace {

// Each pair's connected end in `mesh`, and the listening end it advertised,
// as Gloo prints them (connectFullMesh writes the advertised ones under the
// mesh rank through `adapter`).
void addPairAddresses(PeerDirectory::Peer& self, gloo::Context& mesh,
                      const GlooStoreAdapter& adapter) {
  for (int r = 0; r < mesh.size; ++r) {
    if (r != mesh.rank) self.addresses.push_back(mesh.getPair(r)->address().str());
  }
  if (const std::vector<char>* blob = adapter.written(std::to_string(mesh.rank))) {
    for (std::string& a : PeerDirectory::advertisedAddresses(*blob, mesh.size - 1)) {
      self.addresses.push_back(std::move(a));
    }
  }
}

}  // namespace

GlooCommunicator::GlooCommunicator(int rank, int size, std::unique_ptr<rdzv::StoreClient> store,
                                   std::string prefix, GlooOptions options,
                                   std::unique_ptr<rdzv::StoreServer> server)
    : Communicator(rank, size),
      server_(std::move(server)),
      store_(std::move(store)),
      prefix_(std::move(prefix)),
      options_(std::move(options)) {
  connectMesh();
  if (shouldSpin()) spinner_ = std::make_unique<IdleSpinner>();
}

// Another node's ranks on this machine run in another agent's session: the
// spinner would take their CPU time (GlooOptions::Spin).
bool GlooCommunicator::shouldSpin() const {
  using Spin = GlooOptions::Spin;
  if (size() == 1 || options_.spinWhileWaiting == Spin::kNever) return false;
  if (options_.spinWhileWaiting == Spin::kAlways) return true;
  for (int r : peers_.ranksOnHost(host_)) {
    if (layout_.nodeOf(r) != layout_.node()) return false;
  }
  return true;
}

GlooCommunicator::~GlooCommunicator() {
  shutdown();
  // A failed rank that hosts the store keeps it up a moment, so that the
  // other ranks can still read which peer was lost.
  if (server_ && failed_) std::this_thread::sleep_for(std::chrono::seconds(1));
}

void GlooCommunicator::connectMesh() {
  ignoreSigpipe();  // Gloo writes with writev: the one place (common/sigpipe.h)
  gloo::transport::tcp::attr attr;
  if (!options_.iface.empty()) {
    attr.iface = options_.iface;
  } else {
    attr.hostname = options_.listenHost;
  }
  try {
    device_ = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw ConfigError(
        fmt::format("communicator: cannot listen on {} '{}' for the other ranks: {} "
                    "(set GLOO_SOCKET_IFNAME to an interface the ranks share)",
                    options_.iface.empty() ? "address" : "interface",
                    options_.iface.empty() ? options_.listenHost : options_.iface, e.what()));
  }
  host_ = readHostFacts().hostname;
  PeerDirectory::Peer self{host_, static_cast<long>(::getpid()), {}};
  mesh_ = joinMesh(rank(), size(), "/gloo/", "its peers", self);
  layout_ = NodeLayout::exchange(*store_, prefix_, rank(), size(),
                                 options_.node.empty() ? host_ : options_.node, options_.timeout);
  if (options_.sharedMemory && layout_.spansNodesWithNeighbours() && layout_.isLeader()) {
    leaders_ = joinMesh(layout_.node(), layout_.nodes(), "/gloo-leaders/",
                        "the other nodes' leaders", self);
  }
  for (std::string& a : PeerDirectory::localSocketAddresses()) {
    self.addresses.push_back(std::move(a));
  }
  PeerDirectory::publish(*store_, prefix_, rank(), self);
  peers_.load(*store_, prefix_, rank(), size(), options_.timeout);
  attachSharedMemory();
  // Nobody leaves construction (and may stop a store it hosts) before
  // every rank has read the directory.
  doBarrier();
}

std::unique_ptr<GlooMesh> GlooCommunicator::joinMesh(int meshRank, int meshSize,
                                                     const std::string& keys,
                                                     std::string_view peers,
                                                     PeerDirectory::Peer& self) {
  auto mesh = std::make_shared<gloo::rendezvous::Context>(meshRank, meshSize);
  mesh->setTimeout(options_.timeout);
  GlooStoreAdapter adapter(*store_, prefix_ + keys, options_.timeout);
  try {
    mesh->connectFullMesh(adapter, device_);
  } catch (const gloo::Exception& e) {
    throw CommunicationError(
        fmt::format("communicator: rank {} could not connect to {}: {}", rank(), peers, e.what()));
  }
  addPairAddresses(self, *mesh, adapter);
  return std::make_unique<GlooMesh>(
      std::move(mesh),
      GlooMeshTuning{options_.timeout, options_.bcubeBelowBytes, options_.gatherBelowBytes,
                     options_.gatherMaxRanks, options_.maxSegmentBytes});
}

void GlooCommunicator::attachSharedMemory() {
  if (!options_.sharedMemory || size() == 1) return;
  if (layout_.nodes() > 1) {
    if (layout_.spansNodesWithNeighbours()) attachNodeMemory();
    return;
  }
  const size_t slot = options_.sharedSlotBytes;
  std::unique_ptr<SharedMemoryCollectives> attached;
  const bool everyone = shareSegment(
      prefix_ + "/shm/name", SharedMemoryCollectives::segmentBytes(size(), slot), 0,
      [&](SharedSegment& segment) { SharedMemoryCollectives::format(segment, size(), slot); },
      [&](SharedSegment segment) {
        attached = std::make_unique<SharedMemoryCollectives>(std::move(segment), rank(), size(),
                                                             slot, options_.timeout);
      },
      "shared-memory collectives, the ranks use TCP");
  if (!everyone) return;
  shared_ = std::move(attached);
  attachMessages(prefix_ + "/shm/messages", 0, shared_.get(),
                 "shared-memory send and recv, they use TCP");
  onNodeRanksAttached(shared_.get());
}

void GlooCommunicator::attachMessages(const std::string& key, int creator,
                                      const SharedMemoryCollectives* collectives,
                                      std::string_view without) {
  const int ranks = static_cast<int>(layout_.neighbours().size());
  const size_t half = SharedMemoryMessages::halfBytesFor(ranks, options_.sharedSlotBytes);
  std::unique_ptr<SharedMemoryMessages> attached;
  const bool everyone = shareSegment(
      key, SharedMemoryMessages::segmentBytes(ranks, half), creator,
      [&](SharedSegment& segment) { SharedMemoryMessages::format(segment, ranks, half); },
      [&](SharedSegment segment) {
        attached = std::make_unique<SharedMemoryMessages>(std::move(segment), layout_.localRank(),
                                                          ranks, half, *collectives);
      },
      without, /*sharing=*/collectives != nullptr);
  if (everyone) messages_ = std::move(attached);
}

void GlooCommunicator::onNodeRanksAttached(SharedMemoryCollectives* collectives) {
  if (collectives) collectives->yieldIfOversubscribed();
  peersReadDirectly_ = everyRankCanReadItsPeers(collectives);
  if (collectives) collectives->usePaths(options_, peersReadDirectly_);
  if (messages_ && peersReadDirectly_) messages_->readPeersDirectly(options_.sharedDirectFromBytes);
}

// Every rank has attached (shareSegment agreed), so each can try to read
// each of its node's ranks' memory; all read directly only if all can.
// Where some cannot (a container forbids it), the slots serve, and nothing
// is printed: the path is only slower. transport() says which.
bool GlooCommunicator::everyRankCanReadItsPeers(const SharedMemoryCollectives* collectives) {
  int32_t everyone = !collectives || collectives->canReadEveryPeer() ? 1 : 0;
  allreduceAs("communicator", &everyone, &everyone, 1, DataType::kInt32, ReduceOp::kMin);
  return everyone == 1;
}

std::string GlooCommunicator::transport() const {
  const char* direct =
      peersReadDirectly_ ? ", large blocks and messages read from the peers directly" : "";
  if (shared_) {
    return fmt::format("shared memory{}{}", messages_ ? "" : " (send and recv over tcp)", direct);
  }
  if (hierarchy_) {
    return fmt::format("shared memory within each of {} nodes, tcp between them{}", layout_.nodes(),
                       direct);
  }
  return "tcp";
}

bool GlooCommunicator::shareSegment(const std::string& key, size_t bytes, int creator,
                                    const std::function<void(SharedSegment&)>& format,
                                    const std::function<void(SharedSegment)>& adopt,
                                    std::string_view without, bool sharing) {
  static std::atomic<int> created{0};
  std::string name;
  std::string problem;
  try {
    SharedSegment segment;
    if (!sharing) {
      // alone on its node: nothing to map, it only takes part in the vote
    } else if (rank() == creator) {
      const std::string wanted = fmt::format("/distrun-{}-{}", ::getpid(), created++);
      try {
        segment = SharedSegment::create(wanted, bytes);
      } catch (const Error&) {
        store_->set(key, "");
        throw;
      }
      name = wanted;
      if (format) format(segment);
      store_->set(key, name);
    } else {
      const std::string published = store_->get(key, options_.timeout).value_or("");
      if (published.empty()) {
        throw std::runtime_error(fmt::format("rank {} did not create the segment", creator));
      }
      segment = SharedSegment::open(published, bytes);
    }
    if (sharing) adopt(std::move(segment));
  } catch (const std::exception& e) {
    problem = e.what();
  }
  int32_t everyone = problem.empty() ? 1 : 0;
  allreduceAs("communicator", &everyone, &everyone, 1, DataType::kInt32, ReduceOp::kMin);
  if (!name.empty()) SharedSegment::unlink(name);  // all have it open
  if (!problem.empty()) {
    std::cerr << fmt::format("distrun: warning: rank {}: no {}: {}\n", rank(), without, problem);
  }
  return everyone == 1;
}

// Regions are numbered in allocation order, the same on every rank; a set
// that some rank could not map keeps its number, unused.
std::shared_ptr<void> GlooCommunicator::doAllocateReducible(size_t bytes) {
  if (!shared_ || !options_.sharedBuffers || bytes == 0) {
    return Communicator::doAllocateReducible(bytes);
  }
  const auto id = static_cast<uint32_t>(regions_.size());
  std::shared_ptr<SharedRegions> regions;
  const bool everyone = shareSegment(
      fmt::format("{}/shm/regions/{}", prefix_, id), SharedRegions::segmentBytes(size(), bytes), 0,
      nullptr,
      [&](SharedSegment segment) {
        regions = std::make_shared<SharedRegions>(std::move(segment), size(), bytes, id);
      },
      "shared buffer, allreduces on it copy through the slots");
  regions_.emplace_back(everyone ? regions : nullptr);
  if (!everyone) return Communicator::doAllocateReducible(bytes);
  return std::shared_ptr<void>(regions, regions->region(rank()));
}

bool GlooCommunicator::doAllreduceInPlace(void* data, size_t count, DataType type, ReduceOp op) {
  if (!shared_) return false;
  for (const std::weak_ptr<SharedRegions>& weak : regions_) {
    const std::shared_ptr<SharedRegions> regions = weak.lock();
    if (!regions) continue;
    const std::optional<size_t> offset = regions->offsetIn(rank(), data, count * sizeOf(type));
    if (!offset) continue;
    noteAlgorithm("shm_in_place");
    guardedShared("allreduce", [&] { shared_->runInPlace(*regions, *offset, count, type, op); });
    return true;
  }
  return false;
}

void GlooCommunicator::doAllreduce(const void* in, void* out, size_t count, DataType type,
                                   ReduceOp op) {
  allreduceAs("allreduce", in, out, count, type, op);
}

void GlooCommunicator::allreduceAs(const char* name, const void* in, void* out, size_t count,
                                   DataType type, ReduceOp op) {
  if (ranInSharedMemory(name,
                        [&](SharedMemoryCollectives& s) { s.run(in, out, count, type, op); })) {
    return;
  }
  if (hierarchy_) {
    hierarchy_->allreduce(name, in, out, count, type, op);
    noteAlgorithm("hierarchical");
    return;
  }
  allreduceOnMesh(name, *mesh_, in, out, count, type, op);
}

void GlooCommunicator::allreduceOnMesh(const char* name, GlooMesh& mesh, const void* in, void* out,
                                       size_t count, DataType type, ReduceOp op) {
  guarded(name, [&] { noteAlgorithm(mesh.allreduce(in, out, count, type, op)); });
}

bool GlooCommunicator::ranInSharedMemory(
    const char* op, const std::function<void(SharedMemoryCollectives&)>& call) {
  if (!shared_) return false;
  noteAlgorithm("shm");
  guardedShared(op, [&] { call(*shared_); });
  return true;
}

void GlooCommunicator::doBroadcast(const void* in, void* out, size_t count, DataType type,
                                   int root) {
  if (ranInSharedMemory("broadcast", [&](SharedMemoryCollectives& s) {
        s.broadcast(in, out, count, type, root);
      })) {
    return;
  }
  if (hierarchy_) {
    hierarchy_->broadcast(in, out, count, type, root);
    noteAlgorithm("hierarchical");
    return;
  }
  guarded("broadcast", [&] { mesh_->broadcast(in, out, count, type, root); });
}

void GlooCommunicator::doAllgather(const void* in, void* out, size_t count, DataType type) {
  if (ranInSharedMemory("allgather",
                        [&](SharedMemoryCollectives& s) { s.allgather(in, out, count, type); })) {
    return;
  }
  if (hierarchy_ && count * sizeOf(type) * static_cast<size_t>(size()) <
                        options_.hierarchicalAllgatherBelowBytes) {
    hierarchy_->allgather(in, out, count, type);
    noteAlgorithm("hierarchical");
    return;
  }
  guarded("allgather", [&] { mesh_->allgather(in, out, count, type); });
}

void GlooCommunicator::doReduceScatter(const void* in, void* out, size_t count, DataType type,
                                       ReduceOp op) {
  if (ranInSharedMemory("reduce_scatter", [&](SharedMemoryCollectives& s) {
        s.reduceScatter(in, out, count, type, op);
      })) {
    return;
  }
  const size_t block = count * sizeOf(type);
  std::vector<char> reduced(block * static_cast<size_t>(size()));
  allreduceAs("reduce_scatter", in, reduced.data(), count * static_cast<size_t>(size()), type, op);
  std::memcpy(out, reduced.data() + block * static_cast<size_t>(rank()), block);
}

void GlooCommunicator::doAlltoall(const void* in, void* out, size_t count, DataType type) {
  if (ranInSharedMemory("alltoall",
                        [&](SharedMemoryCollectives& s) { s.alltoall(in, out, count, type); })) {
    return;
  }
  const size_t total = count * static_cast<size_t>(size());
  if (hierarchy_ && total * sizeOf(type) < options_.hierarchicalAlltoallBelowBytes) {
    hierarchy_->alltoall(in, out, count, type);
    noteAlgorithm("hierarchical");
    return;
  }
  guarded("alltoall", [&] { mesh_->alltoall(in, out, count, type); });
}

void GlooCommunicator::doBarrier() {
  if (ranInSharedMemory("barrier", [](SharedMemoryCollectives& s) { s.barrier(); })) return;
  if (hierarchy_) {
    hierarchy_->barrier();
    noteAlgorithm("hierarchical");
    return;
  }
  guarded("barrier", [&] { mesh_->barrier(); });
}

}  // namespace distrun::comm
