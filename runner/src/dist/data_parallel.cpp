#include "dist/data_parallel.hpp"

#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>

#include "dist/world_impl.hpp"
#include "runner/error.hpp"

namespace runner::dist {

struct DataParallel::State {
  // The reducer reports through its logger on some paths (find_unused_parameters) without
  // checking it exists, as Python's DDP always sets one; the logger owns the reducer.
  std::shared_ptr<c10d::Reducer> reducer;
  std::shared_ptr<c10d::Logger> logger;
  std::vector<torch::Tensor> buffers;
  size_t bucket_count = 0;  ///< of the first assignment (the reducer rebuilds after step 1)
};

namespace {

// DDP's bf16_compress_hook (PyTorch has it in Python only; fp16's is built into the reducer):
// the bucket cast to bf16 and divided by the world size, all-reduced, and copied back.
class Bf16CompressHook : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  using CppCommHookInterface::CppCommHookInterface;
  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor compressed = bucket.getBufferRef().to(at::kBFloat16);
    compressed.div_(state_->getSize());
    std::vector<at::Tensor> tensors = {compressed};
    auto reduced = state_->allreduce(tensors)->getFuture();
    at::Tensor buffer = bucket.getBufferRef();
    return reduced->then(
        [buffer](c10::ivalue::Future& done) {
          buffer.copy_(done.value().toTensorVector()[0]);
          return c10::IValue(buffer);
        },
        reduced->elementType());
  }
};

// Whether `a` and `b` address the same elements at the same offsets: strides may differ only
// in dimensions of size 1, which no index ever steps through.
bool same_addressing(at::IntArrayRef sizes, at::IntArrayRef a, at::IntArrayRef b) {
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 && a[d] != b[d]) return false;
  return true;
}

}  // namespace

void match_gradient_layout(torch::Tensor& param) {
  // Autograd's layout contract ignores strides of size-1 dimensions, the reducer's bucket views
  // do not: a 1x1 conv weight's gradient may arrive as [C, 1, C, C] for a [C, 1, 1, 1] weight,
  // and the reducer then copies it on every step ("Grad strides do not match bucket view
  // strides"). Relabel such a gradient with the parameter's strides: the same bytes, no copy.
  const std::vector<int64_t> sizes = param.sizes().vec(), strides = param.strides().vec();
  param.register_hook([sizes, strides](const torch::Tensor& grad) -> torch::Tensor {
    if (!grad.defined() || grad.is_sparse() || grad.sizes() != at::IntArrayRef(sizes) ||
        grad.strides() == at::IntArrayRef(strides) ||
        !same_addressing(sizes, grad.strides(), strides))
      return {};  // undefined: keep the gradient as it is
    return grad.as_strided(sizes, strides, grad.storage_offset());
  });
}

DataParallel::DataParallel(std::shared_ptr<World> world, std::shared_ptr<torch::nn::Module> module,
                           DataParallelOptions options)
    : world_(std::move(world)), module_(std::move(module)), options_(options) {
  if (!module_) throw Error("DataParallel: no model given");
  if (options_.grad_comm != "fp32" && options_.grad_comm != "fp16" && options_.grad_comm != "bf16")
    throw ConfigError("train.grad_comm '" + options_.grad_comm + "': expected fp32, fp16 or bf16");
  if (options_.bucket_cap_mb <= 0) {
    throw ConfigError("distributed bucket_cap_mb must be positive (got " +
                      std::to_string(options_.bucket_cap_mb) + ")");
  }
  if (!world_->distributed()) return;
  state_ = std::make_unique<State>();
  world_->broadcast_module(*module_);
  for (auto& buffer : module_->buffers()) state_->buffers.push_back(buffer);

  std::vector<torch::Tensor> params;
  for (auto& p : module_->parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  if (params.empty()) return;
  if (options_.match_gradient_layout)
    for (auto& p : params) match_gradient_layout(p);
  const auto cap = static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024);
  const int64_t first_cap = std::min<int64_t>(c10d::kDefaultFirstBucketBytes, cap);
  // As PyTorch's DDP: a small first bucket so communication starts early, buckets listed in
  // reverse parameter order because gradients arrive roughly in that order.
  auto [buckets, limits] = c10d::compute_bucket_assignment_by_size(
      params, {static_cast<size_t>(first_cap), static_cast<size_t>(cap)},
      std::vector<bool>(params.size(), false));
  std::reverse(buckets.begin(), buckets.end());
  std::reverse(limits.begin(), limits.end());
  state_->bucket_count = buckets.size();
  with_rank_context(*world_, "setting up gradient all-reduce", [&] {
    state_->reducer = compat::make_reducer(params, buckets, limits, world_->impl()->group, cap,
                                           options_.find_unused_parameters,
                                           /*gradient_as_bucket_view=*/false, first_cap);
    state_->logger = std::make_shared<c10d::Logger>(state_->reducer);
    state_->reducer->set_logger(state_->logger);
    if (options_.grad_comm == "fp16")
      state_->reducer->register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);
    else if (options_.grad_comm == "bf16")
      state_->reducer->register_comm_hook(
          std::make_unique<Bf16CompressHook>(world_->impl()->group));
  });
}

size_t DataParallel::bucket_count() const { return state_ ? state_->bucket_count : 0; }

DataParallel::~DataParallel() = default;

void DataParallel::before_forward() {
  if (!state_) return;
  if (state_->reducer && torch::GradMode::is_enabled()) {
    state_->reducer->prepare_for_forward();
    // Every iteration on every rank: rebuild is a collective after the first backward.
    with_rank_context(*world_, "gradient bucket rebuild",
                      [&] { state_->reducer->rebuild_buckets(); });
  }
  if (options_.broadcast_buffers && !state_->buffers.empty()) {
    torch::NoGradGuard no_grad;
    with_rank_context(*world_, "broadcast of BatchNorm buffers", [&] {
      c10d::broadcast_coalesced(world_->impl()->group, state_->buffers, 250u * 1024u * 1024u, 0);
    });
  }
}

void DataParallel::before_backward(const std::vector<torch::Tensor>& outputs, bool sync) {
  if (!state_ || !state_->reducer || !sync) return;
  // Outputs are only searched for unused parameters; without that the list may stay empty.
  state_->reducer->prepare_for_backward(
      options_.find_unused_parameters ? outputs : std::vector<torch::Tensor>{});
}

void DataParallel::zero_grad() {
  // As torch's zero_grad(set_to_none=True), Python's default: the next backward writes fresh
  // gradients instead of adding to zeros, which saves writing and then re-reading every
  // gradient each step (for convnext_small, 200 MB of each per step). The reducer makes a
  // gradient it finds undefined.
  for (auto& p : module_->parameters()) p.mutable_grad() = torch::Tensor();
}

}  // namespace runner::dist
