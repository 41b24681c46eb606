#include "runner/models/compute_copies.hpp"

#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace runner::models {
namespace {

// A trainable weight the forward has asked for. The copy exists once an optimizer writes it;
// until then the forward returns the weight and autocast casts it as it always does.
struct Entry {
  using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;
  std::optional<WeakTensor> owner;  // tells a freed tensor from a new one at the same address
  const void* data = nullptr;
  torch::Tensor copy;    // defined once an optimizer writes it
  int64_t version = -1;  // the weight's version the copy was written from
};

struct Table {
  std::mutex mutex;
  std::unordered_map<const c10::TensorImpl*, Entry> entries;
};

Table& table() {
  static Table instance;
  return instance;
}

std::atomic<bool> copies_on{true};

bool same_weight(const Entry& e, const torch::Tensor& weight) {
  return e.owner && !e.owner->expired() && e.data == weight.data_ptr() &&
         (!e.copy.defined() ||
          (e.copy.sizes() == weight.sizes() && e.copy.strides() == weight.strides()));
}

// The entry for `weight`, new when its tensor is new (or reused an address) or its storage moved.
Entry& entry_of(Table& t, const torch::Tensor& weight) {
  Entry& e = t.entries[weight.unsafeGetTensorImpl()];
  if (!same_weight(e, weight)) {
    if (t.entries.size() > 1) {  // drop the entries of freed tensors (a model built again)
      for (auto it = t.entries.begin(); it != t.entries.end();)
        it = (!it->second.owner || it->second.owner->expired()) && &it->second != &e
                 ? t.entries.erase(it)
                 : std::next(it);
    }
    e = Entry{};
    e.owner.emplace(weight.getIntrusivePtr());
    e.data = weight.data_ptr();
  }
  return e;
}

// The forward's view of the copy; its backward sends the gradient to the float32 weight as
// autocast's cast (ToCopyBackward) does: the bf16 gradient converted to float32.
class KeptCopy : public torch::autograd::Function<KeptCopy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& /*weight*/,
                               const torch::Tensor& copy) {
    return copy;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*,
                                               torch::autograd::tensor_list grads) {
    return {grads[0].to(torch::kFloat), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor compute_weight(const torch::Tensor& weight) {
  if (!copies_on.load(std::memory_order_relaxed) || !weight.defined() || !weight.requires_grad() ||
      !weight.is_cpu() || weight.scalar_type() != torch::kFloat ||
      !weight.is_non_overlapping_and_dense() || !at::autocast::is_autocast_enabled(at::kCPU) ||
      at::autocast::get_autocast_dtype(at::kCPU) != at::kBFloat16)
    return weight;
  torch::Tensor copy;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    Entry& e = entry_of(t, weight);
    if (!e.copy.defined()) return weight;  // no optimizer writes it (yet)
    if (e.version != weight._version()) {
      // Changed by something else than the optimizer's update (a checkpoint, the average swapped
      // in): written again from the weight before it is read.
      torch::NoGradGuard no_grad;
      e.copy.copy_(weight);
      e.version = weight._version();
    }
    copy = e.copy;
  }
  if (!torch::GradMode::is_enabled()) return copy;
  return KeptCopy::apply(weight, copy);
}

torch::Tensor compute_copy_to_write(const torch::Tensor& param) {
  if (!copies_on.load(std::memory_order_relaxed)) return {};
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto found = t.entries.find(param.unsafeGetTensorImpl());
  if (found == t.entries.end() || !same_weight(found->second, param)) return {};
  Entry& e = found->second;
  if (!e.copy.defined()) {
    e.copy = torch::empty_strided(param.sizes(), param.strides(),
                                  param.options().dtype(torch::kBFloat16));
    e.version = -1;  // not written yet: a forward before the first write casts it
  }
  return e.copy;
}

void compute_copy_written(const torch::Tensor& param) {
  param.unsafeGetTensorImpl()->bump_version();
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto found = t.entries.find(param.unsafeGetTensorImpl());
  if (found != t.entries.end()) found->second.version = param._version();
}

void set_compute_copies(bool on) { copies_on.store(on, std::memory_order_relaxed); }

namespace {
std::function<std::string()>& copy_writer() {
  static std::function<std::string()> describe;
  return describe;
}
}  // namespace

void set_compute_copy_writer(std::function<std::string()> describe) {
  copy_writer() = std::move(describe);
}

std::string compute_copy_writer() {
  return copy_writer() ? copy_writer()() : std::string("not written by any optimizer");
}

bool compute_copies_on() { return copies_on.load(std::memory_order_relaxed); }

}  // namespace runner::models
