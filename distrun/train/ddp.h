#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

#include "distrun/comm/communicator.h"

namespace distrun::train {

struct DdpOptions {
  // Gradients are reduced in buckets of about this many MB, filled in
  // reverse parameter order (the order backward produces them).
  double bucketCapMb = 25;
  // The first bucket (the last layers' gradients, ready first) closes at
  // this size, so its all-reduce starts early in backward.
  double firstBucketMb = 1;
  // Start each bucket's all-reduce as soon as its gradients are ready,
  // while backward goes on. false: all buckets after backward (to measure
  // what overlap buys).
  bool overlap = true;
  // Each parameter's grad() is a view into its bucket (PyTorch's
  // gradient_as_bucket_view): backward accumulates straight into the
  // bucket and the all-reduce averages it in place, with no copy in and
  // none back. false: grad() keeps its own memory and is copied.
  bool gradientAsBucketView = true;
  // Rebuild the buckets once, after the first synchronised backward, in
  // the order the gradients became ready (PyTorch's rebuild). false keeps
  // the first layout: a run resumed from a snapshot then reduces every
  // step exactly as an uninterrupted run, on any transport (distrun-train
  // --deterministic).
  bool rebuildBuckets = true;
};

// Where the time of the last synchronised backward pass went.
struct DdpStats {
  int64_t buckets = 0;          // all-reduces per synchronised step
  int64_t syncedSteps = 0;      // backward passes that communicated
  double lastWaitSeconds = 0;   // end of backward -> gradients averaged
  double totalWaitSeconds = 0;  // the same, summed over all steps
};

// Data parallelism for any torch::nn::Module over a distrun Communicator,
// the way PyTorch's DistributedDataParallel does it:
//
//  - Construction (collective: every rank, same order): checks that every
//    rank's parameters and buffers have the same names, types and shapes
//    (ConfigError naming the first difference otherwise), then broadcasts
//    them from rank 0. A bucket size not above 0 is a UsageError naming
//    the DdpOptions field.
//  - Every backward pass then averages the gradients over the ranks: a hook
//    on each parameter's gradient accumulator marks the gradient ready in
//    its bucket; a full bucket starts an asynchronous all-reduce (avg) while
//    backward continues; buckets start in the same order on every rank.
//    After the first synchronised backward the buckets are rebuilt once
//    in the order rank 0's gradients became ready (PyTorch's rebuild), so
//    a model whose parameters were registered in another order than
//    backward reaches them still starts its all-reduces early.
//    The buckets live in the communicator's reducible memory
//    (Communicator::allocateReducible): with every rank on one host they
//    are shared, and each all-reduce sums them where they lie.
//    With gradientAsBucketView (the default) param.grad() is a view into
//    the bucket from the first backward on (again after a grad is set to
//    undefined), so the average lands in grad() in place; otherwise the
//    hook copies grad() in and the end of backward copies the average
//    back. Either way, after optimizer.step() every rank holds
//    bitwise-equal parameters.
//  - A parameter that got no gradient on some rank in a step counts as
//    zero there (its bucket starts at the end of backward instead of
//    hanging); one that got no gradient on any rank keeps its grad()
//    untouched (undefined stays undefined, a value keeps its value).
//  - Inside a noSync() guard backward passes only accumulate locally; the
//    first backward after it averages the accumulated gradients.
//
// Contracts: the module is used by one thread (the one calling backward);
// every rank runs the same number of synchronised backward passes; the
// module and the communicator outlive this object. Errors of an all-reduce
// (a lost peer: CommunicationError, exit 69) surface from backward().
class DistributedDataParallel {
 public:
  DistributedDataParallel(torch::nn::Module& module, comm::Communicator& comm,
                          DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // While alive, backward passes accumulate gradients without communicating.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard noSync() { return NoSyncGuard(*this); }

  // Broadcasts the module's buffers (e.g. batch-norm statistics) from rank
  // 0; call before forward to keep them equal, as PyTorch does by default.
  void syncBuffers();

  // The parameter names of each bucket, in the order buckets are reduced.
  std::vector<std::vector<std::string>> bucketParameterNames() const;
  const DdpStats& stats() const { return stats_; }
  comm::Communicator& communicator() { return comm_; }

 private:
  struct Bucket;
  class GradientHook;

  const torch::Tensor& bucketView(size_t param) const;
  void verifyShapes();
  void broadcastFromRankZero(const std::vector<torch::Tensor>& tensors);
  void assignBuckets(const std::vector<size_t>& order);
  void allocateBuckets();
  void rebuildBuckets();
  std::vector<size_t> agreedReadyOrder();
  void registerHooks();
  void onGradientReady(size_t param);
  void startRound();
  void markReady(size_t param, bool fromHook);
  void launchReadyBuckets(bool endOfBackward);
  void launch(size_t bucket);
  void finishRound();
  void deliverAverages(const std::vector<torch::Tensor>& untouched);

  torch::nn::Module& module_;
  comm::Communicator& comm_;
  DdpOptions options_;
  std::vector<std::string> names_;
  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> slotOf_;  // param -> (bucket, slot)
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hookKeys_;
  std::vector<bool> ready_;
  std::vector<bool> usedSinceSync_;
  std::vector<size_t> readyOrder_;  // hooks' order, until the rebuild
  bool rebuilt_;                    // or never to be: !options.rebuildBuckets
  size_t nextToLaunch_ = 0;
  bool requireSync_ = true;
  bool roundActive_ = false;
  DdpStats stats_;
};

}  // namespace distrun::train
