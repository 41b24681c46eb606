#include "optimizers/adam_with_copy.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/torch.h>

#include "optimizers/adam_with_copy_loop.hpp"

namespace runner::optim {
namespace {

// ATen's float32 vector width where its kernel splits vector loop and scalar tail; 0 where its
// kernels are built for another instruction set (runner's loop then does not apply).
int64_t aten_float_lanes() {
  const std::string capability = at::get_cpu_capability();
  if (capability == "AVX512") return 16;
  if (capability == "AVX2") return 8;
  return 0;
}

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

// Two steps over every branch (Adam and AdamW, with and without weight decay, both lerp forms;
// a vector part and a tail) by ATen's kernel and by runner's: the same bits, or runner's is off.
bool probe_equals_aten() {
  at::Generator generator = at::detail::createCPUGenerator(20261203);
  const int64_t n = 4 * aten_float_lanes() + 5;
  for (bool decoupled : {false, true}) {
    for (double weight_decay : {0.0, 0.05}) {
      for (double beta1 : {0.9, 0.3}) {
        const AdamStepOptions o{1e-3, beta1, 0.999, weight_decay, 1e-8, decoupled};
        const auto opts = torch::TensorOptions().dtype(torch::kFloat);
        torch::Tensor p = torch::randn({n}, generator, opts),
                      g = torch::randn({n}, generator, opts);
        torch::Tensor m = torch::randn({n}, generator, opts) * 0.1;
        torch::Tensor v = torch::rand({n}, generator, opts) * 0.01;
        torch::Tensor p2 = p.clone(), m2 = m.clone(), v2 = v.clone();
        torch::Tensor copy = torch::empty({n}, opts.dtype(torch::kBFloat16));
        for (int step = 1; step <= 2; ++step) {
          std::vector<torch::Tensor> ps{p}, gs{g}, ms{m}, vs{v}, none,
              steps{torch::full({}, float(step))};
          if (decoupled)
            at::_fused_adamw_(ps, gs, ms, vs, none, steps, o.lr, o.beta1, o.beta2, o.weight_decay,
                              o.eps, false, false, std::nullopt, std::nullopt);
          else
            at::_fused_adam_(ps, gs, ms, vs, none, steps, o.lr, o.beta1, o.beta2, o.weight_decay,
                             o.eps, false, false, std::nullopt, std::nullopt);
          adam_step_with_copy(p2, g, m2, v2, copy, step, o);
        }
        const auto same_bits = [](const torch::Tensor& a, const torch::Tensor& b) {
          return torch::equal(a.view(torch::kInt32), b.view(torch::kInt32));
        };
        if (!same_bits(p, p2) || !same_bits(m, m2) || !same_bits(v, v2) ||
            !torch::equal(copy.view(torch::kInt16), p.to(torch::kBFloat16).view(torch::kInt16)))
          return false;
      }
    }
  }
  return true;
}

}  // namespace

bool adam_with_copy_supported() {
  static const bool supported = cpu_has_avx2_fma() && aten_float_lanes() > 0 && probe_equals_aten();
  return supported;
}

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
  const AdamLoopConstants c = constants_of(step, options);
  const bool lerp_small = std::abs(c.grad_coefficient) < 0.5f;
  const int64_t lanes = std::max<int64_t>(aten_float_lanes(), 1);
  float* p = param.data_ptr<float>();
  const float* g = grad.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  auto* out = reinterpret_cast<uint16_t*>(copy.data_ptr<at::BFloat16>());
  const int64_t numel = param.numel();
  // ATen's split: cache-line units of 16 floats over the threads, each part a vector loop and
  // a tail; only the last part has a tail.
  constexpr int64_t unit = 16;
  at::parallel_for(0, (numel + unit - 1) / unit, 0, [&](int64_t begin, int64_t end) {
    begin *= unit;
    end = std::min(end * unit, numel);
    const int64_t size = end - begin;
    adam_loop_with_copy(p + begin, g + begin, m + begin, v + begin, out + begin, size,
                        size - size % lanes, c, options.decoupled, lerp_small);
  });
}

}  // namespace runner::optim
