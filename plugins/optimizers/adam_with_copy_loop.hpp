#pragma once
// The loop of adam_with_copy.cpp, in a file of its own because it is compiled with
// -ffp-contract=off (a multiply-add fuses exactly where ATen's kernel fuses one, nowhere else)
// and without torch's headers.

#include <cstdint>

namespace runner::optim {

struct AdamLoopConstants {
  float beta2, grad_coefficient, sq_grad_coefficient, bias_correction2_sqrt, eps;
  float weight_decay;   // Adam (L2): added to the gradient; 0 for AdamW
  float decay_scale;    // AdamW: 1 - lr * weight_decay; 1 for Adam
  float neg_step_size;  // -lr / bias_correction1
};

/// Elements [0, vector_end) as ATen's vector loop computes them, [vector_end, n) as its scalar
/// tail; each parameter also stored as bf16 (round to nearest even, a NaN as a NaN) in `copy`.
/// `decoupled` picks AdamW's weight decay, `lerp_small` ATen's branch of exp_avg.lerp_ for
/// 1 - beta1 < 0.5. On a CPU without FMA it is correct but slow (callers check
/// cpu_has_avx2_fma).
void adam_loop_with_copy(float* param, const float* grad, float* exp_avg, float* exp_avg_sq,
                         uint16_t* copy, int64_t n, int64_t vector_end, const AdamLoopConstants& c,
                         bool decoupled, bool lerp_small);

/// Whether the CPU has AVX2 and FMA (the loop's fast clone).
bool cpu_has_avx2_fma();

}  // namespace runner::optim
