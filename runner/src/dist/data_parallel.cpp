#include "dist/data_parallel.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "config/shared_memory_rules.hpp"
#include "dist/shared_memory_all_reduce.hpp"
#include "dist/world_impl.hpp"
#include "runner/error.hpp"
#include "runner/optim/sharded_step.hpp"

namespace runner::dist {

// The sharded step's answers to the optimizer: owned ranges the hook records each step, and
// where each parameter's state lives in the arena (right after the parameter's own copy).
class SharedShards : public optim::ParameterShards {
 public:
  struct Place {
    unsigned char* parameter;  ///< the parameter's copy in the arena
    size_t block_bytes;        ///< its bytes rounded to a cache line: state k at (k + 1) * this
  };
  std::pair<int64_t, int64_t> owned(const torch::Tensor& param) const override {
    const auto found = owned_.find(param.unsafeGetTensorImpl());
    return found == owned_.end() ? std::pair<int64_t, int64_t>{0, 0} : found->second;
  }
  torch::Tensor shared_state(const torch::Tensor& param, int slot) const override {
    const Place& place = places.at(param.unsafeGetTensorImpl());
    auto keep = segment;  // the state keeps the segment mapped, as the parameters do
    return torch::from_blob(
        place.parameter + (slot + 1) * place.block_bytes, param.sizes(), param.strides(),
        [keep](void*) {}, param.options());
  }
  std::unordered_map<const void*, std::pair<int64_t, int64_t>> owned_;
  std::unordered_map<const void*, Place> places;
  std::shared_ptr<SharedMemoryAllReduce> segment;
};

// A bucket of the sharded step: its parameters, one after another, and where each rank's share
// of their gradients begins (world size + 1 offsets into the bucket).
struct ShareBucket {
  std::vector<torch::Tensor> params;
  std::vector<size_t> bounds;
};

struct DataParallel::State {
  // The reducer reports through its logger on some paths (find_unused_parameters) without
  // checking it exists, as Python's DDP always sets one; the logger owns the reducer.
  std::shared_ptr<c10d::Reducer> reducer;
  std::shared_ptr<c10d::Logger> logger;
  std::vector<torch::Tensor> buffers;
  size_t bucket_count = 0;  ///< of the first assignment (the reducer rebuilds after step 1)
  std::shared_ptr<SharedMemoryAllReduce> shared_memory;  ///< null: the process group averages
  bool shared_memory_tried = false;  ///< join_shared_memory ran (a collective, once a run)
  std::unordered_set<const void*> layout_matched;  ///< parameters match_gradient_layout hooked
  std::unique_ptr<SharedShards> shards;            ///< set: the sharded step
  /// The sharded step's buckets (no reducer): each split into one share per rank, exchanged
  /// after a backward that syncs.
  std::vector<ShareBucket> share_buckets;
  bool sync_backward = false;   ///< before_backward's sync, for after_backward
  std::string why_not_sharded;  ///< asked for (shard_state_slots) but not set up: why
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

// Averages each bucket through shared memory on the autograd thread, before backward goes on:
// on CPU ranks that share the cores there is nothing to overlap with. Registered only when
// shared_memory_unsuitable() found every parameter, so every bucket, float32 or float64 on CPU.
class SharedMemoryHook : public c10d::CommHookInterface {
 public:
  /// `bf16`: train.grad_comm bf16, the float32 buckets travel as bf16 (averaged in float32).
  SharedMemoryHook(std::shared_ptr<SharedMemoryAllReduce> all_reduce, bool bf16)
      : all_reduce_(std::move(all_reduce)), bf16_(bf16) {}

  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor buffer = bucket.getBufferRef();
    const auto count = static_cast<size_t>(buffer.numel());
    if (bf16_)
      all_reduce_->average_bf16(buffer.data_ptr<float>(), count);
    else if (buffer.scalar_type() == at::kFloat)
      all_reduce_->average(buffer.data_ptr<float>(), count);
    else
      all_reduce_->average(buffer.data_ptr<double>(), count);
    auto done = c10::make_intrusive<c10::ivalue::Future>(c10::TensorType::get());
    done->markCompleted(c10::IValue(buffer));
    return done;
  }

  at::Tensor parseHookResult(const c10::IValue& result) override { return result.toTensor(); }

 private:
  std::shared_ptr<SharedMemoryAllReduce> all_reduce_;
  bool bf16_;
};

// Why this run's gradients cannot go through shared memory, or "" when they can.
std::string shared_memory_unsuitable(const World& world, const DataParallelOptions& options,
                                     const std::vector<torch::Tensor>& params) {
  config::SharedMemoryFacts facts;  // `runner validate` asks the same rule of the config
  facts.cpu_ranks = world.backend() == "gloo";
  facts.nodes = world.world_size() / std::max(1, world.local_world_size());
  facts.grad_comm = options.grad_comm;
  if (const std::string why = config::why_no_shared_memory(facts); !why.empty()) return why;
  for (const auto& p : params) {
    if (p.scalar_type() != torch::kFloat && p.scalar_type() != torch::kDouble)
      return "it averages float32/float64 gradients, the model has " +
             std::string(c10::toString(p.scalar_type())) + " parameters";
    if (options.grad_comm == "bf16" && p.scalar_type() != torch::kFloat)
      return "its bf16 exchange is for float32 gradients, the model has " +
             std::string(c10::toString(p.scalar_type())) + " parameters";
  }
  return "";
}

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
  if (options_.grad_transport != "auto" && options_.grad_transport != "shared_memory" &&
      options_.grad_transport != "process_group")
    throw ConfigError("train.grad_transport '" + options_.grad_transport +
                      "': expected auto, shared_memory or process_group");
  // What config::why_not_sharded rules out is the caller's to check (StepRig asks it).
  if (options_.shard_state_slots > 0 &&
      (options_.grad_comm != "fp32" || options_.grad_transport == "process_group"))
    throw Error("internal: the sharded step needs fp32 gradients through shared memory");
  if (options_.bucket_cap_mb <= 0) {
    throw ConfigError("distributed bucket_cap_mb must be positive (got " +
                      std::to_string(options_.bucket_cap_mb) + ")");
  }
  if (!world_->distributed()) return;
  state_ = std::make_unique<State>();
  world_->broadcast_module(*module_);
  for (auto& buffer : module_->buffers()) state_->buffers.push_back(buffer);
  attach_reducer();
}

void DataParallel::trainable_changed() {
  if (!state_) return;
  // The old reducer's autograd hooks go with it; the gradients it left are views of its
  // buckets, dropped so that the new one writes its own.
  zero_grad();
  state_->logger.reset();
  state_->reducer.reset();
  state_->share_buckets.clear();
  attach_reducer();
}

// Splits each bucket into one share per rank and tells the optimizer which elements of each
// parameter are this rank's. A share boundary falls a multiple of kAlignment elements into its
// parameter: ATen's fused Adam then steps every element with the same arithmetic (vector lanes,
// never a scalar tail) whichever rank steps it, so sharded and replicated runs, resumed or
// not, give the same bits.
void DataParallel::plan_shares(const std::vector<torch::Tensor>& params,
                               const std::vector<std::vector<size_t>>& buckets) {
  constexpr int64_t kAlignment = 64;
  const int ranks = world_->world_size(), rank = world_->rank();
  auto& owned = state_->shards->owned_;
  owned.clear();
  for (const auto& indices : buckets) {
    ShareBucket bucket;
    std::vector<int64_t> offsets;
    int64_t count = 0;
    for (size_t index : indices) {
      bucket.params.push_back(params[index]);
      offsets.push_back(count);
      count += params[index].numel();
    }
    bucket.bounds = {0};
    for (int r = 1; r < ranks; ++r) {
      const int64_t target = count * r / ranks;
      int64_t bound = count;
      for (size_t i = 0; i < offsets.size(); ++i)
        if (target >= offsets[i] && target < offsets[i] + bucket.params[i].numel())
          bound = offsets[i] + (target - offsets[i]) / kAlignment * kAlignment;
      bucket.bounds.push_back(std::max(bucket.bounds.back(), static_cast<size_t>(bound)));
    }
    bucket.bounds.push_back(static_cast<size_t>(count));
    for (size_t i = 0; i < bucket.params.size(); ++i) {
      const int64_t n = bucket.params[i].numel();
      auto clamped = [&](size_t bound) {
        return std::clamp<int64_t>(static_cast<int64_t>(bound) - offsets[i], 0, n);
      };
      const int64_t begin = clamped(bucket.bounds[rank]), end = clamped(bucket.bounds[rank + 1]);
      owned[bucket.params[i].unsafeGetTensorImpl()] = {begin, std::max(begin, end)};
    }
    state_->share_buckets.push_back(std::move(bucket));
  }
}

void DataParallel::attach_reducer() {
  std::vector<torch::Tensor> params;
  for (auto& p : module_->parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  if (params.empty()) return;
  if (options_.match_gradient_layout)
    for (auto& p : params)
      if (state_->layout_matched.insert(p.unsafeGetTensorImpl()).second) match_gradient_layout(p);
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
  // gradient_as_bucket_view: after the all-reduce each .grad is a view of its bucket, as DDP's
  // gradient_as_bucket_view=True, so the averaged gradients are not copied back out (198 MB
  // per step for convnext_small). Nothing here detaches or resizes a .grad, its one caveat.
  if (!state_->shared_memory_tried) {
    state_->shared_memory = join_shared_memory(params);
    if (state_->shared_memory && state_->shared_memory->arena_bytes() > 0) share_parameters();
    // The step's flags too: through Gloo they cost each step socket calls and woken threads
    // on cores that have none to spare (2 ranks x 1 thread: about 2 % of the step).
    if (state_->shared_memory) world_->impl()->shared_memory = state_->shared_memory;
  }
  state_->shared_memory_tried = true;
  if (state_->shards) {  // the sharded step exchanges the gradients itself: no reducer
    plan_shares(params, buckets);
    return;
  }
  with_rank_context(*world_, "setting up gradient all-reduce", [&] {
    state_->reducer = compat::make_reducer(params, buckets, limits, world_->impl()->group, cap,
                                           options_.find_unused_parameters,
                                           /*gradient_as_bucket_view=*/true, first_cap);
    state_->logger = std::make_shared<c10d::Logger>(state_->reducer);
    state_->reducer->set_logger(state_->logger);
  });
  // One hook per reducer: shared memory (fp32, or bf16 on the wire) where it can, else the
  // process group's own all-reduce with train.grad_comm's compression.
  if (state_->shared_memory)
    state_->reducer->register_comm_hook(
        std::make_unique<SharedMemoryHook>(state_->shared_memory, options_.grad_comm == "bf16"));
  else if (options_.grad_comm == "fp16")
    state_->reducer->register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);
  else if (options_.grad_comm == "bf16")
    state_->reducer->register_comm_hook(std::make_unique<Bf16CompressHook>(world_->impl()->group));
}

std::shared_ptr<SharedMemoryAllReduce> DataParallel::join_shared_memory(
    const std::vector<torch::Tensor>& params) {
  if (options_.grad_transport == "process_group") return nullptr;
  const std::string unsuitable = shared_memory_unsuitable(*world_, options_, params);
  const bool required = options_.grad_transport == "shared_memory";
  if (!unsuitable.empty()) {
    if (required)
      throw ConfigError("train.grad_transport: shared_memory cannot be used here: " + unsuitable +
                        " (use auto or process_group)");
    state_->why_not_sharded = "it needs the gradients in shared memory, where " + unsuitable;
    return nullptr;
  }
  std::string why_not;
  const size_t arena = arena_bytes();
  auto joined = join_shared_memory_all_reduce(*world_, why_not,
                                              SharedMemoryAllReduce::kDefaultChunkBytes, arena);
  if (!joined && arena > 0) {  // the gradients may still go through a segment without it
    state_->why_not_sharded = why_not;
    if (world_->is_main())
      spdlog::warn(
          "train.shard_optimizer: every rank steps every parameter: the shared parameters and "
          "optimizer state need {:.0f} MiB more of /dev/shm ({}); mount a larger /dev/shm "
          "(docker run --shm-size) or set train.shard_optimizer: off",
          static_cast<double>(arena) / (1 << 20), why_not);
    why_not.clear();
    joined = join_shared_memory_all_reduce(*world_, why_not);
  }
  if (!joined) {
    const std::string message = fmt::format(
        "rank {}: gradients cannot go through shared memory ({})", world_->rank(), why_not);
    if (required) throw Error(message + "; set train.grad_transport: process_group");
    if (world_->is_main()) spdlog::warn("{}; they go through Gloo instead", message);
  }
  return joined;
}

// Every parameter of the module, frozen ones too (they may thaw), each once.
std::vector<torch::Tensor> DataParallel::all_parameters() const {
  std::vector<torch::Tensor> all;
  std::unordered_set<const void*> seen;
  for (auto& p : module_->parameters())
    if (seen.insert(p.unsafeGetTensorImpl()).second) all.push_back(p);
  return all;
}

size_t DataParallel::arena_bytes() {
  if (options_.shard_state_slots <= 0) return 0;
  size_t bytes = 0;
  for (const auto& p : all_parameters()) {
    // One block of host memory per parameter, its state laid out the same.
    if (p.scalar_type() != torch::kFloat || !p.is_non_overlapping_and_dense()) {
      state_->why_not_sharded = "it steps float32 parameters, the model has " +
                                std::string(c10::toString(p.scalar_type())) + " ones";
      return 0;
    }
    bytes += (1 + options_.shard_state_slots) * ((p.nbytes() + 63) / 64 * 64);
  }
  return bytes;
}

void DataParallel::share_parameters() {
  auto shards = std::make_unique<SharedShards>();
  shards->segment = state_->shared_memory;
  unsigned char* at = state_->shared_memory->arena();
  const std::vector<torch::Tensor> params = all_parameters();
  for (const auto& p : params) {
    const size_t block = (p.nbytes() + 63) / 64 * 64;
    shards->places[p.unsafeGetTensorImpl()] = {at, block};
    // Rank 0's values (every rank holds them since broadcast_module), written once.
    if (world_->is_main()) std::memcpy(at, p.data_ptr(), p.nbytes());
    at += (1 + options_.shard_state_slots) * block;
  }
  state_->shared_memory->wait_for_all("placing the parameters in shared memory");
  torch::NoGradGuard no_grad;
  auto keep = state_->shared_memory;  // the parameters keep the segment mapped
  for (auto p : params) {
    const SharedShards::Place& place = shards->places.at(p.unsafeGetTensorImpl());
    p.set_data(torch::from_blob(
        place.parameter, p.sizes(), p.strides(), [keep](void*) {},
        p.options().requires_grad(false)));
  }
  state_->shards = std::move(shards);
}

std::string DataParallel::why_not_sharded() const {
  return state_ ? state_->why_not_sharded : "there is one process";
}

const optim::ParameterShards* DataParallel::shards() const {
  return state_ ? state_->shards.get() : nullptr;
}

void DataParallel::after_optimizer_step() {
  if (state_ && state_->shards) state_->shared_memory->wait_for_all("the sharded optimizer step");
}

std::string DataParallel::transport() const {
  if (!state_ || (!state_->reducer && state_->share_buckets.empty())) return "none";
  return state_->shared_memory ? "shared_memory" : world_->backend();
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
  const auto plain = [](const torch::Tensor& t) { return t.is_cpu() && t.is_contiguous(); };
  if (options_.broadcast_buffers && !state_->buffers.empty() && state_->shared_memory &&
      std::all_of(state_->buffers.begin(), state_->buffers.end(), plain)) {
    std::vector<SharedMemoryAllReduce::Bytes> pieces;
    for (auto& buffer : state_->buffers) pieces.push_back({buffer.data_ptr(), buffer.nbytes()});
    state_->shared_memory->broadcast_from_first(pieces, "the broadcast of BatchNorm buffers");
  } else if (options_.broadcast_buffers && !state_->buffers.empty()) {
    torch::NoGradGuard no_grad;
    with_rank_context(*world_, "broadcast of BatchNorm buffers", [&] {
      c10d::broadcast_coalesced(world_->impl()->group, state_->buffers, 250u * 1024u * 1024u, 0);
    });
  }
}

void DataParallel::before_backward(const std::vector<torch::Tensor>& outputs, bool sync) {
  if (state_) state_->sync_backward = sync;
  if (!state_ || !state_->reducer || !sync) return;
  // Outputs are only searched for unused parameters; without that the list may stay empty.
  state_->reducer->prepare_for_backward(
      options_.find_unused_parameters ? outputs : std::vector<torch::Tensor>{});
}

// The sharded step's exchange, straight from the gradients autograd left (DDP's reducer would
// first copy each into its bucket: 47 MB written and read again per step for resnet18).
void DataParallel::after_backward() {
  if (!state_ || state_->share_buckets.empty() || !state_->sync_backward) return;
  state_->sync_backward = false;
  torch::NoGradGuard no_grad;
  std::vector<SharedMemoryAllReduce::Span> spans;
  for (auto& bucket : state_->share_buckets) {
    spans.clear();
    for (auto& p : bucket.params) {
      torch::Tensor& grad = p.mutable_grad();
      // A parameter this rank's step did not use averages zeros (as DDP's
      // find_unused_parameters); a gradient laid out unlike its parameter is copied into its
      // layout, as the reducer's bucket would: the shares count elements in memory order.
      if (!grad.defined())
        grad = torch::zeros_like(p, torch::MemoryFormat::Preserve);
      else if (grad.strides() != p.strides() || !grad.is_non_overlapping_and_dense())
        grad = torch::empty_like(p, torch::MemoryFormat::Preserve).copy_(grad);
      spans.push_back({grad.data_ptr<float>(), static_cast<size_t>(grad.numel())});
    }
    state_->shared_memory->average_own_share(spans, bucket.bounds);
  }
}

void DataParallel::zero_grad() {
  // As torch's zero_grad(set_to_none=True), Python's default: the next backward writes fresh
  // gradients instead of adding to zeros, which saves writing and then re-reading every
  // gradient each step (for convnext_small, 200 MB of each per step). The reducer copies the
  // fresh gradient into its bucket and points .grad at the bucket's view again.
  for (auto& p : module_->parameters()) p.mutable_grad() = torch::Tensor();
}

}  // namespace runner::dist
