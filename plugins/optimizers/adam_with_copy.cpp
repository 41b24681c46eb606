#include "optimizers/adam_with_copy.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/torch.h>

#include "optimizers/adam_with_copy_loop.hpp"

namespace runner::optim {
namespace {

AdamLoopConstants constants_of(double step, const AdamStepOptions& o) {
  // In double, then rounded once, as ATen's kernel does.
  const double bias_correction1 = 1 - std::pow(o.beta1, step);
  const double bias_correction2 = 1 - std::pow(o.beta2, step);
  AdamLoopConstants c{};
  c.beta2 = static_cast<float>(o.beta2);
  c.grad_coefficient = static_cast<float>(1 - o.beta1);
  c.sq_grad_coefficient = static_cast<float>(1 - o.beta2);
  c.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  c.eps = static_cast<float>(o.eps);
  c.weight_decay = o.decoupled ? 0.0f : static_cast<float>(o.weight_decay);
  c.decay_scale =
      o.decoupled && o.weight_decay != 0 ? static_cast<float>(1 - o.lr * o.weight_decay) : 1.0f;
  c.neg_step_size = static_cast<float>(-(o.lr / bias_correction1));
  return c;
}

bool same_layout(const torch::Tensor& a, const torch::Tensor& b) {
  return a.device() == b.device() && a.sizes() == b.sizes() && a.strides() == b.strides();
}

std::atomic<int64_t> tensors_stepped{0};

// runner's loop over `param`, split as ATen splits its kernel: cache-line units of 16 floats
// over the threads, each part a vector loop of `lanes` floats and a scalar tail.
void step_split_as_aten(const torch::Tensor& param, const torch::Tensor& grad,
                        const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                        const torch::Tensor& copy, double step, const AdamStepOptions& options,
                        int64_t lanes) {
  const AdamLoopConstants c = constants_of(step, options);
  const bool lerp_small = std::abs(c.grad_coefficient) < 0.5f;
  float* p = param.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  auto* out = reinterpret_cast<uint16_t*>(copy.data_ptr<at::BFloat16>());
  const int64_t numel = param.numel();
  constexpr int64_t unit = 16;
  at::parallel_for(0, (numel + unit - 1) / unit, 0, [&](int64_t begin, int64_t end) {
    begin *= unit;
    end = std::min(end * unit, numel);
    const int64_t size = end - begin;
    adam_loop_with_copy(p + begin, g + begin, m + begin, v + begin, out + begin, size,
                        size - size % lanes, c, options.decoupled, lerp_small);
  });
}

bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::equal(a.view(torch::kInt32), b.view(torch::kInt32));
}

// Whether runner's loop at vector width `lanes` steps as ATen's kernel does, bit for bit: three
// steps of every branch (Adam and AdamW, with and without weight decay, both lerp forms) over
// tensors of every length from 1 to 65 (a vector part and each tail length at widths 4..32)
// and one that the threads split, with the lr as the engine passes it (a double tensor).
bool steps_as_aten(int64_t lanes) {
  at::Generator generator = at::detail::createCPUGenerator(20261204);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 65; ++n) lengths.push_back(n);
  lengths.push_back(16 * 257 + 13);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat);
  for (bool decoupled : {false, true}) {
    for (double weight_decay : {0.0, 0.05}) {
      for (double beta1 : {0.9, 0.3}) {
        const AdamStepOptions o{3.7e-3, beta1, 0.999, weight_decay, 1e-8, decoupled};
        std::vector<torch::Tensor> ps, gs, ms, vs, none, steps, ours_p, ours_m, ours_v, copies;
        for (const int64_t n : lengths) {
          ps.push_back(torch::randn({n}, generator, opts));
          gs.push_back(torch::randn({n}, generator, opts));
          ms.push_back(torch::randn({n}, generator, opts) * 0.1);
          vs.push_back(torch::rand({n}, generator, opts) * 0.01);
          ours_p.push_back(ps.back().clone());
          ours_m.push_back(ms.back().clone());
          ours_v.push_back(vs.back().clone());
          copies.push_back(torch::empty({n}, opts.dtype(torch::kBFloat16)));
          steps.push_back(torch::zeros({}, opts));
        }
        const torch::Tensor lr = torch::full({}, o.lr, torch::kDouble);
        for (int step = 1; step <= 3; ++step) {
          for (auto& s : steps) s.add_(1);
          if (decoupled)
            at::_fused_adamw_(ps, gs, ms, vs, none, steps, lr, o.beta1, o.beta2, o.weight_decay,
                              o.eps, false, false, std::nullopt, std::nullopt);
          else
            at::_fused_adam_(ps, gs, ms, vs, none, steps, lr, o.beta1, o.beta2, o.weight_decay,
                             o.eps, false, false, std::nullopt, std::nullopt);
          for (size_t i = 0; i < ps.size(); ++i)
            step_split_as_aten(ours_p[i], gs[i], ours_m[i], ours_v[i], copies[i], step, o, lanes);
        }
        for (size_t i = 0; i < ps.size(); ++i)
          if (!same_bits(ps[i], ours_p[i]) || !same_bits(ms[i], ours_m[i]) ||
              !same_bits(vs[i], ours_v[i]) ||
              !torch::equal(copies[i].view(torch::kInt16),
                            ps[i].to(torch::kBFloat16).view(torch::kInt16)))
            return false;
      }
    }
  }
  return true;
}

// ATen's fused Adam vector width on this machine, measured rather than read off its CPU
// capability (the wheel's AVX512 kernels split this loop by 8 floats, not 16): the first width
// at which runner's loop steps as ATen's, or 0 when none does (ATen's DEFAULT kernels fuse no
// multiply-add; another ATen build may differ).
int64_t probe_vector_lanes() {
  if (!cpu_has_avx2_fma()) return 0;
  for (const int64_t lanes : {8, 16, 4})
    if (steps_as_aten(lanes)) return lanes;
  return 0;
}

int64_t vector_lanes() {
  static const int64_t lanes = probe_vector_lanes();
  return lanes;
}

}  // namespace

bool adam_with_copy_supported() { return vector_lanes() > 0; }

std::string adam_with_copy_description() {
  const int64_t lanes = vector_lanes();
  const std::string kernels = "ATen's " + at::get_cpu_capability() + " kernels";
  if (lanes > 0)
    return "written by the Adam/AdamW update in the same pass (runner's loop, equal to " + kernels +
           "' fused Adam bit for bit: " + std::to_string(lanes) + "-float vector loop)";
  return std::string("written after ATen's Adam/AdamW step, one pass more (") +
         (cpu_has_avx2_fma() ? kernels + "' fused Adam is not runner's arithmetic"
                             : std::string("this CPU has no AVX2 and FMA")) +
         ")";
}

int64_t adam_with_copy_tensors_stepped() { return tensors_stepped.load(); }

bool adam_with_copy_applies(const torch::Tensor& param, const torch::Tensor& grad,
                            const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                            const torch::Tensor& copy) {
  return param.is_cpu() && param.scalar_type() == torch::kFloat &&
         param.is_non_overlapping_and_dense() && grad.defined() && !grad.is_sparse() &&
         grad.scalar_type() == torch::kFloat && same_layout(param, grad) &&
         exp_avg.scalar_type() == torch::kFloat && same_layout(param, exp_avg) &&
         exp_avg_sq.scalar_type() == torch::kFloat && same_layout(param, exp_avg_sq) &&
         copy.scalar_type() == torch::kBFloat16 && same_layout(param, copy);
}

void adam_step_with_copy(const torch::Tensor& param, const torch::Tensor& grad,
                         const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                         const torch::Tensor& copy, double step, const AdamStepOptions& options) {
  TORCH_CHECK(adam_with_copy_supported(), "internal: runner's Adam kernel is off on this machine");
  step_split_as_aten(param, grad, exp_avg, exp_avg_sq, copy, step, options, vector_lanes());
  tensors_stepped.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace runner::optim
