#include "optimizers/adam_with_copy_loop.hpp"

#include <cmath>
#include <cstring>

namespace runner::optim {
namespace {

#if defined(__x86_64__)
#define RUNNER_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RUNNER_CPU_CLONES
#endif

// mode 0: no weight decay, 1: Adam's (added to the gradient), 2: AdamW's (scales the weight).
// Where ATen's kernel (as the wheel is built) fuses a multiply into an add, std::fma; the
// vector loop and the scalar tail fuse the second moment's update differently.
template <int mode, bool lerp_small>
RUNNER_CPU_CLONES void adam_loop(float* __restrict param, const float* __restrict grad,
                                 float* __restrict exp_avg, float* __restrict exp_avg_sq,
                                 uint16_t* __restrict copy, int64_t n, int64_t vector_end,
                                 AdamLoopConstants c) {
  const float beta2 = c.beta2, sq_coefficient = c.sq_grad_coefficient;
  const float bias_sqrt = c.bias_correction2_sqrt, eps = c.eps, neg_step = c.neg_step_size;
  const float decay = mode == 1 ? c.weight_decay : 0.0f;
  const float scale = mode == 2 ? c.decay_scale : 1.0f;
  // exp_avg.lerp_(grad, w): w * (grad - m) + m for w < 0.5, else (w - 1) * (grad - m) + grad.
  const float lerp_coefficient = lerp_small ? c.grad_coefficient : c.grad_coefficient - 1.0f;
  for (int64_t i = 0; i < n; ++i) {
    float g = grad[i];
    float p = param[i];
    if constexpr (mode == 1) g = std::fma(p, decay, g);
    if constexpr (mode == 2) p = p * scale;
    const float m_old = exp_avg[i];
    const float m = std::fma(lerp_coefficient, g - m_old, lerp_small ? m_old : g);
    const float v = i < vector_end ? std::fma(sq_coefficient * g, g, exp_avg_sq[i] * beta2)
                                   : std::fma(exp_avg_sq[i], beta2, sq_coefficient * g * g);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v) / bias_sqrt + eps;
    p = p + neg_step * m / denom;
    param[i] = p;
    uint32_t bits;
    std::memcpy(&bits, &p, sizeof bits);
    const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    copy[i] = p != p ? uint16_t{0x7FC0} : static_cast<uint16_t>(rounded);
  }
}

}  // namespace

void adam_loop_with_copy(float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                         uint16_t* copy, int64_t n, int64_t vector_end, const AdamLoopConstants& c,
                         bool decoupled, bool lerp_small) {
  const int mode = decoupled ? (c.decay_scale != 1.0f ? 2 : 0) : (c.weight_decay != 0.0f ? 1 : 0);
  // One loop body per case: no branch inside the loop, so that it vectorises.
  using Loop = void (*)(float*, const float*, float*, float*, uint16_t*, int64_t, int64_t,
                        AdamLoopConstants);
  static const Loop loops[3][2] = {{adam_loop<0, false>, adam_loop<0, true>},
                                   {adam_loop<1, false>, adam_loop<1, true>},
                                   {adam_loop<2, false>, adam_loop<2, true>}};
  loops[mode][lerp_small](param, grad, exp_avg, exp_avg_sq, copy, n, vector_end, c);
}

bool cpu_has_avx2_fma() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace runner::optim
