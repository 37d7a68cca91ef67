#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "distrun/comm/communicator.h"
#include "distrun/comm/gloo/gloo_mesh.h"
#include "distrun/comm/gloo/peer_directory.h"
#include "distrun/comm/hierarchical/hierarchy.h"
#include "distrun/comm/hierarchical/node_layout.h"
#include "distrun/comm/idle_spinner.h"
#include "distrun/comm/shm/shared_memory_collectives.h"
#include "distrun/comm/shm/shared_memory_messages.h"
#include "distrun/comm/shm/shared_memory_options.h"
#include "distrun/rdzv/store_client.h"
#include "distrun/rdzv/store_server.h"

namespace gloo {
namespace transport {
class Device;
}
}  // namespace gloo

namespace distrun::comm {

// The Gloo backend's options, the shared-memory engine's among them
// (SharedMemoryOptions). When every rank is on one node, allreduce,
// broadcast, allgather, reduce_scatter, alltoall and barrier go through
// that engine instead of loopback TCP, and send and recv through its
// messages. When the ranks span nodes and some node has several, allreduce
// (and reduce_scatter, which is built on it), broadcast, allgather,
// alltoall and barrier are hierarchical (comm/hierarchical/): shared memory
// within each node, TCP between one leader per node; send and recv between
// ranks of one node go through a segment of the node's, between nodes over
// TCP. Where a rank cannot map its segment, all use TCP.
struct GlooOptions : SharedMemoryOptions {
  // How long one operation may wait for a peer before TimeoutError.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // The address this rank listens on for its peers: a host name or IP
  // address, or, when `iface` is set, ignored in favour of that interface.
  std::string listenHost = "127.0.0.1";
  std::string iface;
  // Allreduce messages below this many bytes use Gloo's bcube algorithm
  // (log2(n) exchange steps: latency-bound sizes), larger ones its ring
  // (2(n-1) steps of 1/n of the data: bandwidth-optimal). Measured on
  // loopback (docs/comm.md); DISTRUN_GLOO_BCUBE_BELOW overrides.
  size_t bcubeBelowBytes = 4 << 20;
  // Below this many bytes, on at most gatherMaxRanks ranks, allreduce is
  // one allgather and a local reduction in rank order: one exchange for 2
  // ranks where bcube needs two (docs/comm.md: measured to 128 KB, which
  // covers the mnist CNN's last bucket); DISTRUN_GLOO_GATHER_BELOW
  // overrides, 0 turns it off.
  size_t gatherBelowBytes = 128 << 10;
  int gatherMaxRanks = 4;
  // The ring sends and reduces in segments of at most this many bytes, so
  // that reducing one segment overlaps receiving the next (Gloo's default,
  // a single segment per step, leaves them in turn). Measured best at 4-8
  // MiB for 16-256 MB messages here (docs/comm.md).
  size_t maxSegmentBytes = 4 << 20;
  // Across nodes, allgathers whose output is below this many bytes take the
  // hierarchical path, larger ones Gloo's ring among all ranks: on two
  // agents of this machine the hierarchy was 1.8-16x the ring up to 4 MB,
  // level at 8 MB and 0.7x from 16 MB, where loopback TCP copies as fast as
  // memory and the ring keeps every rank busy (docs/comm.md);
  // DISTRUN_GLOO_HIERARCHICAL_ALLGATHER_BELOW overrides.
  size_t hierarchicalAllgatherBelowBytes = 8 << 20;
  // The same for alltoall, by the size of one rank's whole input:
  // DISTRUN_GLOO_HIERARCHICAL_ALLTOALL_BELOW overrides (docs/comm.md).
  size_t hierarchicalAlltoallBelowBytes = 1 << 20;
  // While an operation waits on its peers, an idle-class thread keeps this
  // CPU from halting (IdleSpinner). It is idle only among the threads of
  // its own session (its autogroup) or cgroup: a rank of another node on
  // this machine (another agent's session) loses up to half its CPU to it,
  // so by default it spins only where no other node shares the machine.
  // DISTRUN_COMM_SPIN=1 / 0 / auto.
  enum class Spin { kWhereNoOtherNodeSharesTheMachine, kAlways, kNever };
  Spin spinWhileWaiting = Spin::kWhereNoOtherNodeSharesTheMachine;
  // The node this rank is on: ranks with the same name share memory. Empty:
  // this host's name. connect() gives the host's name and the launcher's
  // node number (GROUP_RANK), so that two agents on one machine are two
  // nodes, as their user said.
  std::string node;

  bool operator==(const GlooOptions&) const = default;
};

// The Gloo backend: Gloo's TCP transport and its collectives (ring and
// bcube allreduce, broadcast, allgather, alltoall, barrier, unbound-buffer
// send/recv), with the collectives through shared memory when all ranks
// share a node, and hierarchical when they span nodes (GlooOptions). reduce_scatter is Gloo's
// allreduce keeping this rank's block (Gloo has no standalone reduce-scatter in its new-style API).
// Creating one sets SIGPIPE to ignored for the process, unless the program
// installed a handler (ignoreSigpipe, distrun/common/sigpipe.h): Gloo's
// socket writes would otherwise let a dead peer kill this rank silently.
class GlooCommunicator final : public Communicator {
 public:
  // Meets the other `size` ranks through `store`; every rank passes the
  // same `prefix`. `server`, when given, is the store this rank hosts; it
  // lives as long as the communicator. Throws TimeoutError when a rank does
  // not arrive within options.timeout.
  GlooCommunicator(int rank, int size, std::unique_ptr<rdzv::StoreClient> store, std::string prefix,
                   GlooOptions options, std::unique_ptr<rdzv::StoreServer> server = nullptr);
  ~GlooCommunicator() override;

  std::string_view backend() const override { return "gloo"; }
  std::string transport() const override;
  // Whether an idle-class thread spins while this rank waits (GlooOptions::Spin).
  bool spinsWhileWaiting() const { return spinner_ != nullptr; }

 protected:
  void doAllreduce(const void* in, void* out, size_t count, DataType type, ReduceOp op) override;
  void doBroadcast(const void* in, void* out, size_t count, DataType type, int root) override;
  void doAllgather(const void* in, void* out, size_t count, DataType type) override;
  void doReduceScatter(const void* in, void* out, size_t count, DataType type,
                       ReduceOp op) override;
  void doAlltoall(const void* in, void* out, size_t count, DataType type) override;
  void doSend(const void* data, size_t count, DataType type, int peer, int tag) override;
  void doRecv(void* data, size_t count, DataType type, int peer, int tag) override;
  void doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer, size_t count,
                  DataType type, int tag) override;
  void doBarrier() override;
  bool doAllreduceInPlace(void* data, size_t count, DataType type, ReduceOp op) override;
  std::shared_ptr<void> doAllocateReducible(size_t bytes) override;

 private:
  void connectMesh();
  // Whether options_.spinWhileWaiting asks for the spinner here.
  bool shouldSpin() const;
  // A Gloo mesh over device_ of `meshSize` ranks, this one `meshRank`,
  // meeting under prefix_ + `keys`: every rank's (the communicator's), or
  // on a leader the nodes' leaders' when the hierarchical path may be
  // taken. `self` gains its sockets' addresses; `peers` names the others in
  // an error.
  std::unique_ptr<GlooMesh> joinMesh(int meshRank, int meshSize, const std::string& keys,
                                     std::string_view peers, PeerDirectory::Peer& self);
  // Whatever this rank's share of shared memory is: one segment for all
  // ranks on one node, or one per node for the hierarchical path; all
  // ranks agree on which they use.
  void attachSharedMemory();
  void attachNodeMemory();
  // A segment for send and recv between this node's ranks (every rank's
  // when all are on one node), made by rank `creator` and published under
  // `key`, beside `collectives` (null for a rank alone on its node): the
  // channels of messages_ once every rank of the communicator attached.
  void attachMessages(const std::string& key, int creator,
                      const SharedMemoryCollectives* collectives, std::string_view without);
  // Every rank of this node's segment `collectives` (none where this rank is
  // alone on its node) has attached: its polls yield where the node is
  // oversubscribed, it takes the paths options_ asks for, and it and
  // messages_ read large blocks and messages directly where every rank can.
  void onNodeRanksAttached(SharedMemoryCollectives* collectives);
  // Whether every rank of the communicator can read each of its node's
  // ranks' memory (a collective call: every rank asks).
  bool everyRankCanReadItsPeers(const SharedMemoryCollectives* collectives);
  // Whether messages to and from `peer` go through messages_: it is on
  // this rank's node, and the node's ranks share channels.
  bool onMessageChannel(int peer) const;
  // sendRecv where one peer is on messages_ and the other is not: the TCP
  // side posted first, then the channel's, then the TCP side awaited.
  void sendRecvAcrossChannels(const void* sendData, int sendPeer, void* recvData, int recvPeer,
                              size_t count, DataType type, int tag);
  // Rank `creator` makes a segment of `bytes`, lays it out with `format`
  // (may be empty: zero-filled) and publishes its name under `key`; the
  // others open it; each hands its mapping to `adopt`. Returns whether
  // every rank of the communicator got that far (all take part, `sharing`
  // false for those with nothing to share); the creator then removes the
  // name. A rank that failed warns "no <without>: <why>".
  bool shareSegment(const std::string& key, size_t bytes, int creator,
                    const std::function<void(SharedSegment&)>& format,
                    const std::function<void(SharedSegment)>& adopt, std::string_view without,
                    bool sharing = true);
  // As guarded, for an operation in shared memory (failShared). `ranks`,
  // when given, is this communicator's rank of each of the segment's (a
  // node's segment numbers its ranks from 0).
  void guardedShared(const char* op, const std::function<void()>& call,
                     const std::vector<int>& ranks = {});
  // Runs `call` on the shared-memory collectives, guarded and noted as
  // algorithm "shm", when every rank has them; false when they do not.
  bool ranInSharedMemory(const char* op, const std::function<void(SharedMemoryCollectives&)>& call);
  [[noreturn]] void failShared(const char* op, const SharedMemoryFailure& failure);
  // The hierarchical path's stages (across_nodes.cc): this node's
  // shared-memory collectives and the leaders' mesh, each failing as this
  // communicator does.
  class NodeMemoryStage;
  class LeadersMeshStage;
  // Gloo's allreduce on `mesh` (every rank's, or the leaders'), noted by
  // the algorithm it took; failures name `name`.
  void allreduceOnMesh(const char* name, GlooMesh& mesh, const void* in, void* out, size_t count,
                       DataType type, ReduceOp op);
  // Allreduce by whichever path this communicator has.
  void allreduceAs(const char* name, const void* in, void* out, size_t count, DataType type,
                   ReduceOp op);
  // Runs a Gloo call; turns Gloo's exceptions into CommunicationError or
  // TimeoutError naming the peer (see handleFailure).
  void guarded(const char* op, const std::function<void()>& call);
  [[noreturn]] void handleFailure(const char* op, const std::string& detail);
  // Breaks the communicator for every rank and throws: TimeoutError, or
  // CommunicationError with the first recorded failure when there is one.
  // `lost` names the peer this rank saw go (it may claim the record);
  // `seen` is what this rank saw.
  [[noreturn]] void fail(const char* op, bool timedOut, const std::optional<std::string>& lost,
                         const std::string& seen);
  // The first failure any rank recorded in the store, if it can be read.
  // Records `mine` (when this rank could name the lost peer) if no rank
  // did before; returns the earlier record otherwise.
  std::optional<std::string> firstRecordedFailure(const std::optional<std::string>& mine);

  std::unique_ptr<rdzv::StoreServer> server_;
  std::unique_ptr<rdzv::StoreClient> store_;
  std::string prefix_;
  GlooOptions options_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::unique_ptr<GlooMesh> mesh_;  // every rank's
  std::string host_;                // this machine's hostname (connectMesh)
  PeerDirectory peers_;
  std::unique_ptr<IdleSpinner> spinner_;             // shouldSpin()
  std::unique_ptr<SharedMemoryCollectives> shared_;  // when attachSharedMemory agreed
  // Send and recv between this node's ranks, beside shared_ or node_.
  std::unique_ptr<SharedMemoryMessages> messages_;
  bool peersReadDirectly_ = false;  // everyRankCanReadItsPeers agreed
  NodeLayout layout_;
  std::unique_ptr<SharedMemoryCollectives> node_;      // this node's ranks', when not alone
  std::unique_ptr<GlooMesh> leaders_;                  // on a leader: the leaders' mesh
  std::vector<std::weak_ptr<SharedRegions>> regions_;  // allocateReducible's, by id
  bool failed_ = false;
  // The hierarchical path, when taken (attachNodeMemory): its stages (null
  // where this rank is alone on its node, or not a leader) and collectives.
  std::unique_ptr<NodeStage> nodeStage_;
  std::unique_ptr<LeaderStage> leaderStage_;
  std::unique_ptr<Hierarchy> hierarchy_;
};

}  // namespace distrun::comm
