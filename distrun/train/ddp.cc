#include "distrun/train/ddp.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include <c10/util/strides.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "distrun/common/enforce.h"
#include "distrun/common/error.h"
#include "distrun/common/strings.h"
#include "distrun/train/tensor_comm.h"
#include "distrun/train/train_trace.h"

namespace distrun::train {

namespace {

void checkBucketSize(const char* field, double megabytes) {
  if (megabytes > 0) return;
  throw UsageError(fmt::format("DdpOptions::{} must be above 0 (MB), got {}", field, megabytes));
}

}  // namespace

struct DistributedDataParallel::Bucket {
  torch::ScalarType type = torch::kFloat;
  std::vector<size_t> params;    // indices into params_
  std::vector<int64_t> offsets;  // element offset of each in `flat`
  int64_t gradientElements = 0;  // flat may hold the used-map after them
  torch::Tensor flat;
  std::vector<torch::Tensor> views;  // each param's slot in `flat`, its shape
  size_t pending = 0;                // params not yet ready this round
  comm::Work work;
};

// Runs after a parameter's AccumulateGrad node: param.grad() is final for
// this backward pass.
class DistributedDataParallel::GradientHook : public torch::autograd::FunctionPostHook {
 public:
  GradientHook(DistributedDataParallel& ddp, size_t param) : ddp_(ddp), param_(param) {}
  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    ddp_.onGradientReady(param_);
    return outputs;
  }

 private:
  DistributedDataParallel& ddp_;
  size_t param_;
};

DistributedDataParallel::NoSyncGuard::NoSyncGuard(DistributedDataParallel& ddp)
    : ddp_(ddp), previous_(ddp.requireSync_) {
  ddp_.requireSync_ = false;
}

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { ddp_.requireSync_ = previous_; }

DistributedDataParallel::DistributedDataParallel(torch::nn::Module& module,
                                                 comm::Communicator& comm, DdpOptions options)
    : module_(module), comm_(comm), options_(options), rebuilt_(!options.rebuildBuckets) {
  checkBucketSize("bucketCapMb", options_.bucketCapMb);
  checkBucketSize("firstBucketMb", options_.firstBucketMb);
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad()) continue;
    names_.push_back(item.key());
    params_.push_back(item.value());
  }
  verifyShapes();
  std::vector<torch::Tensor> state = params_;
  for (const auto& buffer : module_.buffers()) state.push_back(buffer);
  broadcastFromRankZero(state);
  std::vector<size_t> reverse(params_.size());
  std::iota(reverse.rbegin(), reverse.rend(), size_t{0});
  assignBuckets(reverse);
  allocateBuckets();
  ready_.assign(params_.size(), false);
  usedSinceSync_.assign(params_.size(), false);
  registerHooks();
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->del_post_hook(hookKeys_[i]);
  }
  for (Bucket& b : buckets_) {
    try {
      b.work.wait();
    } catch (...) {  // already reported by the backward that launched it
    }
  }
}

// One line per tensor, "name dtype [d0, d1, ...]", hashed and compared
// against rank 0's; on a difference rank 0's description is broadcast so
// the rank that differs can name it.
void DistributedDataParallel::verifyShapes() {
  std::vector<std::string> lines;
  auto describe = [&](const std::string& name, const torch::Tensor& t) {
    lines.push_back(fmt::format("{} {} [{}]", name, c10::toString(t.scalar_type()),
                                fmt::join(t.sizes(), ", ")));
  };
  for (size_t i = 0; i < params_.size(); ++i) describe(names_[i], params_[i]);
  for (const auto& item : module_.named_buffers(true)) {
    describe("buffer " + item.key(), item.value());
  }
  const std::string mine = join(lines, "\n");
  std::vector<std::string> rankZero = split(broadcastString(comm_, mine, 0), '\n');
  std::string difference;
  for (size_t i = 0; i < std::max(lines.size(), rankZero.size()); ++i) {
    const std::string here = i < lines.size() ? lines[i] : "(nothing)";
    const std::string there = i < rankZero.size() ? rankZero[i] : "(nothing)";
    if (here != there) {
      difference = fmt::format("tensor {} is '{}' here but '{}' on rank 0", i, here, there);
      break;
    }
  }
  if (mine.empty() && rankZero.size() == 1 && rankZero[0].empty()) difference.clear();
  const std::vector<int64_t> differs =
      allgatherValue(comm_, static_cast<int64_t>(!difference.empty()));
  for (int r = 0; r < comm_.size(); ++r) {
    if (differs[static_cast<size_t>(r)] == 0) continue;
    if (r == comm_.rank()) {
      throw ConfigError(fmt::format(
          "DistributedDataParallel: rank {}'s model differs from rank 0's: {}", r, difference));
    }
    throw ConfigError(
        fmt::format("DistributedDataParallel: rank {}'s model differs from rank 0's (its "
                    "error names the tensor); every rank must build the same model",
                    r));
  }
}

void DistributedDataParallel::broadcastFromRankZero(const std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard noGrad;
  for (const torch::Tensor& t : tensors) broadcastTensor(comm_, t, 0);
}

namespace {

// A tensor shaped like `param` over `flat`'s memory from element `offset`.
// Not an autograd view of `flat`: LibTorch's Optimizer::zero_grad() calls
// detach_() on every grad, which a view refuses.
torch::Tensor sharingMemory(const torch::Tensor& flat, int64_t offset, const torch::Tensor& param) {
  torch::Tensor t = torch::empty({0}, flat.options());
  t.set_(flat.storage(), flat.storage_offset() + offset, param.sizes(),
         c10::contiguous_strides(param.sizes()));
  return t;
}

bool sameMemory(const torch::Tensor& a, const torch::Tensor& b) {
  return a.is_alias_of(b) && a.data_ptr() == b.data_ptr();
}

}  // namespace

// PyTorch's rule: walk the parameters in the order backward should reach
// them (reverse registration order at first, the measured order after the
// rebuild), one open bucket per type, close a bucket once it holds at
// least its limit (the first bucket of a type: firstBucketMb, later ones
// bucketCapMb). Only the plan: allocateBuckets() gives it memory.
void DistributedDataParallel::assignBuckets(const std::vector<size_t>& order) {
  const auto bytes = [](double mb) { return static_cast<int64_t>(mb * 1024 * 1024); };
  std::vector<std::pair<torch::ScalarType, size_t>> open;  // type -> bucket
  std::vector<torch::ScalarType> typesSeen;
  std::vector<int64_t> bucketBytes;
  buckets_.clear();
  slotOf_.assign(params_.size(), {0, 0});
  for (size_t i : order) {
    const torch::ScalarType type = params_[i].scalar_type();
    auto it =
        std::find_if(open.begin(), open.end(), [&](const auto& o) { return o.first == type; });
    if (it == open.end()) {
      buckets_.emplace_back();
      buckets_.back().type = type;
      bucketBytes.push_back(0);
      open.emplace_back(type, buckets_.size() - 1);
      it = open.end() - 1;
    }
    Bucket& b = buckets_[it->second];
    slotOf_[i] = {it->second, b.params.size()};
    b.params.push_back(i);
    b.offsets.push_back(b.gradientElements);
    b.gradientElements += params_[i].numel();
    bucketBytes[it->second] += params_[i].numel() * params_[i].element_size();
    const bool first = std::find(typesSeen.begin(), typesSeen.end(), type) == typesSeen.end();
    const int64_t limit = bytes(first ? options_.firstBucketMb : options_.bucketCapMb);
    if (bucketBytes[it->second] >= limit) {
      if (first) typesSeen.push_back(type);
      open.erase(it);
    }
  }
}

// All buckets share one allocation from the communicator's reducible
// memory (collective: the same layout on every rank), so that with shared
// memory each all-reduce sums the ranks' buckets where they lie. Each
// bucket starts on a cache line. The last bucket also carries the
// used-map: 1 per parameter that got a gradient here, averaged with the
// gradients (zero: unused everywhere).
void DistributedDataParallel::allocateBuckets() {
  if (buckets_.empty()) return;
  constexpr size_t kLine = 64;
  std::vector<int64_t> elements;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const Bucket& b : buckets_) {
    const bool last = &b == &buckets_.back();
    elements.push_back(b.gradientElements + (last ? static_cast<int64_t>(params_.size()) : 0));
    offsets.push_back(total);
    const size_t bytes = static_cast<size_t>(elements.back()) * c10::elementSize(b.type);
    total += (bytes + kLine - 1) / kLine * kLine;
  }
  std::shared_ptr<void> memory = comm_.allocateReducible(total);
  for (size_t k = 0; k < buckets_.size(); ++k) {
    Bucket& b = buckets_[k];
    b.flat = torch::from_blob(
        static_cast<char*>(memory.get()) + offsets[k], {elements[k]}, [memory](void*) {},
        torch::TensorOptions().dtype(b.type));
    b.flat.zero_();
    for (size_t slot = 0; slot < b.params.size(); ++slot) {
      b.views.push_back(sharingMemory(b.flat, b.offsets[slot], params_[b.params[slot]]));
    }
  }
}

// Once, after the first synchronised backward (every rank at the same
// step): buckets in the order gradients became ready, as PyTorch does. A
// layout that stays the same keeps its memory. A grad() that was a view
// into the old buckets is copied in at the next backward and becomes a
// view of the new ones (markReady), as a grad() set to undefined does.
void DistributedDataParallel::rebuildBuckets() {
  rebuilt_ = true;
  const auto layout = [this] {
    std::vector<std::vector<size_t>> params;
    for (const Bucket& b : buckets_) params.push_back(b.params);
    return params;
  };
  const std::vector<std::vector<size_t>> before = layout();
  std::vector<Bucket> previous = std::move(buckets_);
  const std::vector<std::pair<size_t, size_t>> previousSlots = slotOf_;
  assignBuckets(agreedReadyOrder());
  if (layout() == before) {
    buckets_ = std::move(previous);
    slotOf_ = previousSlots;
    return;
  }
  allocateBuckets();
}

// This rank's order of the first synchronised backward's gradients, the
// parameters that got none appended in reverse registration order; then
// rank 0's, for every rank: ranks may see different orders (a branch one
// rank took), their buckets must agree.
std::vector<size_t> DistributedDataParallel::agreedReadyOrder() {
  std::vector<bool> seen(params_.size(), false);
  std::vector<int64_t> order;
  for (size_t i : readyOrder_) {
    seen[i] = true;
    order.push_back(static_cast<int64_t>(i));
  }
  for (size_t i = params_.size(); i-- > 0;) {
    if (!seen[i]) order.push_back(static_cast<int64_t>(i));
  }
  readyOrder_ = {};
  torch::Tensor agreed = torch::tensor(order, torch::kLong);
  broadcastTensor(comm_, agreed, 0);
  const int64_t* first = agreed.data_ptr<int64_t>();
  std::vector<size_t> out;
  for (const int64_t* i = first; i != first + agreed.numel(); ++i) {
    out.push_back(static_cast<size_t>(*i));
  }
  return out;
}

void DistributedDataParallel::registerHooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    std::shared_ptr<torch::autograd::Node> acc =
        torch::autograd::impl::grad_accumulator(params_[i]);
    DISTRUN_ENFORCE(acc != nullptr, "parameter ", names_[i], " has no gradient accumulator");
    hookKeys_.push_back(acc->add_post_hook(std::make_unique<GradientHook>(*this, i)));
    accumulators_.push_back(std::move(acc));
  }
}

void DistributedDataParallel::onGradientReady(size_t param) {
  usedSinceSync_[param] = true;
  if (!requireSync_) return;
  if (!roundActive_) startRound();
  markReady(param, /*fromHook=*/true);
  if (!rebuilt_) readyOrder_.push_back(param);
  if (options_.overlap) launchReadyBuckets(/*endOfBackward=*/false);
}

void DistributedDataParallel::startRound() {
  roundActive_ = true;
  nextToLaunch_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work = comm::Work();
  }
  torch::autograd::Engine::get_default_engine().queue_callback([this] { finishRound(); });
}

const torch::Tensor& DistributedDataParallel::bucketView(size_t param) const {
  const auto [k, slot] = slotOf_[param];
  return buckets_[k].views[slot];
}

// Puts the parameter's gradient (zeros when it has none) into its bucket:
// nothing to do when grad() already is the bucket's view; otherwise a copy,
// after which a hooked gradient becomes the view (gradientAsBucketView).
void DistributedDataParallel::markReady(size_t param, bool fromHook) {
  DISTRUN_ENFORCE(!ready_[param], "gradient of ", names_[param],
                  " produced twice in one backward pass");
  ready_[param] = true;
  const torch::Tensor& view = bucketView(param);
  torch::Tensor& grad = params_[param].mutable_grad();
  if (!grad.defined()) {
    DISTRUN_ENFORCE(!fromHook, "hook fired without a gradient for ", names_[param]);
    view.zero_();
  } else if (!sameMemory(grad, view)) {
    view.copy_(grad);
    if (fromHook && options_.gradientAsBucketView) grad = view;
  }
  --buckets_[slotOf_[param].first].pending;
}

// During backward the last bucket waits for its end: its gradients (the
// first layers') are the last to come, and the end of backward reduces it
// on this thread, without a hand-off to the communicator's thread (for a
// one-bucket model: no hand-off at all).
void DistributedDataParallel::launchReadyBuckets(bool endOfBackward) {
  const size_t launchable = buckets_.size() - (endOfBackward ? 0 : 1);
  while (nextToLaunch_ < launchable && buckets_[nextToLaunch_].pending == 0) {
    launch(nextToLaunch_++);
  }
}

// The last bucket also carries which parameters this rank used, and is
// reduced blocking: after the queued buckets, in order.
void DistributedDataParallel::launch(size_t k) {
  Bucket& b = buckets_[k];
  const BucketTrace traced(k, b.flat.numel() * b.flat.element_size());
  if (k + 1 < buckets_.size()) {
    b.work = allreduceTensorAsync(comm_, b.flat, comm::ReduceOp::kAvg);
    return;
  }
  std::vector<float> used(usedSinceSync_.begin(), usedSinceSync_.end());
  b.flat.narrow(0, b.gradientElements, static_cast<int64_t>(used.size()))
      .copy_(torch::from_blob(used.data(), {static_cast<int64_t>(used.size())}));
  allreduceTensor(comm_, b.flat, comm::ReduceOp::kAvg);
}

// End of backward: parameters without a gradient this pass join as their
// accumulated gradient (noSync) or zeros, the remaining buckets start, and
// the averages reach grad(). A view grad() of a parameter nobody used is
// kept aside, since the all-reduce averages its slot too.
void DistributedDataParallel::finishRound() {
  roundActive_ = false;
  if (buckets_.empty()) return;
  std::vector<torch::Tensor> untouched(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    const torch::Tensor& grad = params_[i].grad();
    if (grad.defined() && sameMemory(grad, bucketView(i))) untouched[i] = grad.clone();
    markReady(i, /*fromHook=*/false);
  }
  const auto start = std::chrono::steady_clock::now();
  trace::Span wait("gradient_wait", "ddp");
  launchReadyBuckets(/*endOfBackward=*/true);
  for (Bucket& b : buckets_) b.work.wait();
  wait.arg("step", trace::currentStep()).arg("buckets", buckets_.size()).end();
  stats_.lastWaitSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.totalWaitSeconds += stats_.lastWaitSeconds;
  stats_.buckets = static_cast<int64_t>(buckets_.size());
  ++stats_.syncedSteps;
  deliverAverages(untouched);
  std::fill(usedSinceSync_.begin(), usedSinceSync_.end(), false);
  if (!rebuilt_) rebuildBuckets();
}

// A parameter used on some rank gets the average in grad(); one used on
// none keeps what it had (`untouched`: its view's value before averaging).
void DistributedDataParallel::deliverAverages(const std::vector<torch::Tensor>& untouched) {
  const Bucket& last = buckets_.back();
  torch::Tensor used =
      last.flat.narrow(0, last.gradientElements, static_cast<int64_t>(params_.size()))
          .to(torch::kFloat);
  const float* usedAnywhere = used.data_ptr<float>();
  torch::NoGradGuard noGrad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& view = bucketView(i);
    if (!(usedAnywhere[i] > 0)) {
      if (untouched[i].defined()) view.copy_(untouched[i]);
      continue;
    }
    torch::Tensor& grad = params_[i].mutable_grad();
    if (grad.defined() && sameMemory(grad, view)) continue;
    if (options_.gradientAsBucketView) {
      grad = view;
    } else if (grad.defined()) {
      grad.copy_(view);
    } else {
      grad = view.clone();
    }
  }
}

void DistributedDataParallel::syncBuffers() {
  std::vector<torch::Tensor> buffers;
  for (const auto& b : module_.buffers()) buffers.push_back(b);
  broadcastFromRankZero(buffers);
}

std::vector<std::vector<std::string>> DistributedDataParallel::bucketParameterNames() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) {
    std::vector<std::string> names;
    for (size_t i : b.params) names.push_back(names_[i]);
    out.push_back(std::move(names));
  }
  return out;
}

}  // namespace distrun::train
