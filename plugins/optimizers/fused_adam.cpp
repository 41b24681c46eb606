#include "optimizers/fused_adam.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "optimizers/adam_with_copy.hpp"
#include "optimizers/state_key.hpp"
#include "runner/models/compute_copies.hpp"

namespace runner::optim {
namespace {

// A parameter whose bf16 compute copy the step writes (runner/models/compute_copies.hpp).
struct WithCopy {
  torch::Tensor param, grad, exp_avg, exp_avg_sq, copy, step;
  bool in_same_pass;  // runner's kernel; otherwise ATen's step, then the copy written from it
};

// One fused call's tensors: the kernel wants one device and dtype per call.
struct FusedLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
  std::vector<torch::Tensor> unowned_steps;  ///< the sharded step: counts of what others step
  std::vector<WithCopy> with_copy;
  torch::Device device = torch::kCPU;
};

// The bf16 copy of `p` to write in this step, when the forward keeps one and nothing in this
// step's arithmetic (amsgrad, a loss scaler's skip) is beyond runner's kernel.
torch::Tensor copy_to_write(const torch::Tensor& p, bool amsgrad, bool may_skip) {
  if (amsgrad || may_skip || !p.is_cpu() || p.scalar_type() != torch::kFloat) return {};
  return models::compute_copy_to_write(p);
}

// A CPU tensor's one value, read in place (no host read: the engine's lr and step counts for
// CPU parameters live in host memory).
double value_in_place(const torch::Tensor& t) {
  TORCH_CHECK(t.is_cpu() && t.numel() == 1, "internal: a one-value CPU tensor");
  return t.scalar_type() == torch::kDouble ? *t.data_ptr<double>()
                                           : static_cast<double>(*t.data_ptr<float>());
}

// runner's kernel over the parameters whose copy it writes in the same pass.
void step_with_copies(const std::vector<WithCopy>& with_copy, const AdamStepOptions& options) {
  for (const auto& w : with_copy) {
    if (!w.in_same_pass) continue;
    adam_step_with_copy(w.param, w.grad, w.exp_avg, w.exp_avg_sq, w.copy, value_in_place(w.step),
                        options);
    models::compute_copy_written(w.param);  // the weight's version moves, as an in-place op's
    w.exp_avg.unsafeGetTensorImpl()->bump_version();
    w.exp_avg_sq.unsafeGetTensorImpl()->bump_version();
  }
}

// Elements [begin, begin + count) of `t` in its memory order, as a 1-d float32 view.
torch::Tensor elements(const torch::Tensor& t, int64_t begin, int64_t count) {
  return torch::from_blob(t.data_ptr<float>() + begin, {count}, t.options());
}

// The sharded step's state tensor `slot` of `param`: `held` where it lives in shared memory
// already, else the shared one, with this rank's owned elements of `held` (a checkpoint's)
// copied in; the other ranks copy theirs as they step them.
torch::Tensor shared_state(const ParameterShards& shards, const torch::Tensor& param,
                           const torch::Tensor& held, int slot, std::pair<int64_t, int64_t> owned) {
  torch::Tensor shared = shards.shared_state(param, slot);
  if (held.defined() && held.data_ptr() == shared.data_ptr()) return held;
  if (!held.defined()) return shared;
  const torch::Tensor laid_out =
      held.strides() == param.strides() ? held : torch::empty_like(param).copy_(held);
  const int64_t count = owned.second - owned.first;
  if (count > 0) elements(shared, owned.first, count).copy_(elements(laid_out, owned.first, count));
  return shared;
}

}  // namespace

template <class Base, class GroupOptions, class ParamState, bool decoupled>
int FusedAdam<Base, GroupOptions, ParamState, decoupled>::state_slots() const {
  for (const auto& group : this->param_groups())
    if (static_cast<const GroupOptions&>(group.options()).amsgrad()) return 3;
  return 2;
}

template <class Base, class GroupOptions, class ParamState, bool decoupled>
torch::Tensor FusedAdam<Base, GroupOptions, ParamState, decoupled>::step(
    torch::optim::Optimizer::LossClosure closure) {
  return step_by_update(*this, closure);
}

template <class Base, class GroupOptions, class ParamState, bool decoupled>
void FusedAdam<Base, GroupOptions, ParamState, decoupled>::update(const torch::Tensor& lr,
                                                                  const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  const double first_lr = optim::first_group_lr(*this);
  const std::optional<torch::Tensor> skip =
      found_inf.defined() ? std::optional<torch::Tensor>(found_inf) : std::nullopt;
  // Every step count advances by one, or by none on a step the loss scaler skips.
  std::map<std::string, torch::Tensor> increments;  // per device
  for (auto& group : this->param_groups()) {
    const auto& options = static_cast<GroupOptions&>(group.options());
    const bool amsgrad = options.amsgrad();
    std::map<std::tuple<std::string, int>, FusedLists> lists;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "Adam does not support sparse gradients");
      auto& slot = this->state_[state_key(this->state_, p)];
      if (shards_) {  // one copy of the state on the host, each rank stepping its elements
        if (!slot) {
          auto state = std::make_unique<ParamState>();
          state->step(0);
          slot = std::move(state);
        }
        auto& state = static_cast<ParamState&>(*slot);
        const auto owned = shards_->owned(p);
        state.exp_avg(shared_state(*shards_, p, state.exp_avg(), 0, owned));
        state.exp_avg_sq(shared_state(*shards_, p, state.exp_avg_sq(), 1, owned));
        if (amsgrad)
          state.max_exp_avg_sq(shared_state(*shards_, p, state.max_exp_avg_sq(), 2, owned));
        FusedLists& l = lists[{p.device().str(), static_cast<int>(p.scalar_type())}];
        torch::Tensor& count = step_counts_[p.unsafeGetTensorImpl()];
        if (!count.defined())
          count = torch::full({}, static_cast<double>(state.step()), torch::kFloat);
        const int64_t n = owned.second - owned.first;
        if (n <= 0) {
          l.unowned_steps.push_back(count);
          continue;
        }
        TORCH_CHECK(p.grad().strides() == p.strides(),
                    "internal: the sharded step needs gradients laid out as their parameters");
        l.params.push_back(elements(p, owned.first, n));
        l.grads.push_back(elements(p.grad(), owned.first, n));
        l.exp_avgs.push_back(elements(state.exp_avg(), owned.first, n));
        l.exp_avg_sqs.push_back(elements(state.exp_avg_sq(), owned.first, n));
        if (amsgrad) l.max_exp_avg_sqs.push_back(elements(state.max_exp_avg_sq(), owned.first, n));
        l.steps.push_back(count);
        continue;
      }
      if (!slot) {  // as the base class initialises it
        auto state = std::make_unique<ParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (amsgrad) state->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      auto& state = static_cast<ParamState&>(*slot);
      if (amsgrad && !state.max_exp_avg_sq().defined())
        state.max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      FusedLists& l = lists[{p.device().str(), static_cast<int>(p.scalar_type())}];
      l.device = p.device();
      torch::Tensor& count = step_counts_[p.unsafeGetTensorImpl()];
      if (!count.defined() || count.device() != p.device())  // first step, or after a load
        count = torch::full({}, static_cast<double>(state.step()),
                            torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
      const torch::Tensor copy = copy_to_write(p, amsgrad, skip.has_value());
      if (copy.defined()) {
        const bool in_same_pass =
            adam_with_copy_supported() &&
            adam_with_copy_applies(p, p.grad(), state.exp_avg(), state.exp_avg_sq(), copy);
        l.with_copy.push_back(
            {p, p.grad(), state.exp_avg(), state.exp_avg_sq(), copy, count, in_same_pass});
        if (in_same_pass) continue;
      }
      l.params.push_back(p);
      l.grads.push_back(p.grad());
      l.exp_avgs.push_back(state.exp_avg());
      l.exp_avg_sqs.push_back(state.exp_avg_sq());
      if (amsgrad) l.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
      l.steps.push_back(count);
    }
    const double beta1 = std::get<0>(options.betas());
    const double beta2 = std::get<1>(options.betas());
    for (auto& [key, l] : lists) {
      // The kernel reads the count of the step it takes: one more, or the same on a step the
      // loss scaler skips (the kernel then changes nothing), as torch's fused Adam counts.
      const torch::Device device = l.device;
      torch::Tensor& increment = increments[device.str()];
      if (!increment.defined())
        increment =
            skip ? (1.0f - skip->to(device).reshape(at::IntArrayRef{})).to(torch::kFloat)
                 : torch::ones({}, torch::TensorOptions().dtype(torch::kFloat).device(device));
      std::vector<torch::Tensor> every_step = l.steps;
      for (const auto& w : l.with_copy)
        if (w.in_same_pass) every_step.push_back(w.step);
      every_step.insert(every_step.end(), l.unowned_steps.begin(), l.unowned_steps.end());
      at::_foreach_add_(every_step, increment);
      const torch::Tensor group_lr =
          lr.defined() ? optim::group_lr_tensor(lr, options.lr(), first_lr) : torch::Tensor();
      if (!l.with_copy.empty())
        step_with_copies(l.with_copy,
                         {group_lr.defined() ? value_in_place(group_lr) : options.lr(), beta1,
                          beta2, options.weight_decay(), options.eps(), decoupled});
      if (l.params.empty()) continue;
      if constexpr (decoupled) {
        if (group_lr.defined())
          at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs,
                            l.steps, group_lr, beta1, beta2, options.weight_decay(), options.eps(),
                            amsgrad, /*maximize=*/false, std::nullopt, skip);
        else
          at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs,
                            l.steps, options.lr(), beta1, beta2, options.weight_decay(),
                            options.eps(), amsgrad, /*maximize=*/false, std::nullopt, skip);
      } else {
        if (group_lr.defined())
          at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                           group_lr, beta1, beta2, options.weight_decay(), options.eps(), amsgrad,
                           /*maximize=*/false, std::nullopt, skip);
        else
          at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                           options.lr(), beta1, beta2, options.weight_decay(), options.eps(),
                           amsgrad, /*maximize=*/false, std::nullopt, skip);
      }
      for (const auto& w : l.with_copy) {  // stepped by ATen above: the copy from the result
        if (w.in_same_pass) continue;
        w.copy.copy_(w.param);
        models::compute_copy_written(w.param);
      }
    }
  }
}

template <class Base, class GroupOptions, class ParamState, bool decoupled>
void FusedAdam<Base, GroupOptions, ParamState, decoupled>::state_to_host() {
  std::vector<ParamState*> states;
  std::vector<torch::Tensor> counts;
  for (auto& group : this->param_groups()) {
    for (auto& p : group.params()) {
      const auto count = step_counts_.find(p.unsafeGetTensorImpl());
      const auto state = this->state_.find(state_key(this->state_, p));
      if (count == step_counts_.end() || state == this->state_.end() || !state->second) continue;
      states.push_back(&static_cast<ParamState&>(*state->second));
      counts.push_back(count->second);
    }
  }
  if (counts.empty()) return;
  // One read, not one per tensor (a model lives on one device).
  const torch::Tensor values = torch::stack(counts).to(torch::kCPU, torch::kDouble);
  const auto v = values.accessor<double, 1>();
  for (size_t i = 0; i < states.size(); ++i)
    states[i]->step(static_cast<int64_t>(std::llround(v[static_cast<int64_t>(i)])));
}

template class FusedAdam<torch::optim::Adam, torch::optim::AdamOptions,
                         torch::optim::AdamParamState, false>;
template class FusedAdam<torch::optim::AdamW, torch::optim::AdamWOptions,
                         torch::optim::AdamWParamState, true>;

}  // namespace runner::optim
