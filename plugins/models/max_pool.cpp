#include "max_pool.hpp"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace runner::models {
namespace {

constexpr int64_t kKernel = 3, kStride = 2, kPadding = 1;

int64_t pooled(int64_t size) { return (size + 2 * kPadding - kKernel) / kStride + 1; }

// ATen's update rule: a strictly larger value, or any NaN, becomes the maximum. Branch-free:
// after a ReLU most windows hold ties, which a branch would mispredict.
inline bool replaces(float value, float best) { return (value > best) | (value != value); }

// best/best_at[x] <- the row's maximum over output column x's three columns (leftmost first)
// where it replaces best[x]. Columns 2x - 1, 2x, 2x + 1 for x in [1, last); the edges apart.
__attribute__((target_clones("avx512f", "avx2", "default"))) void fold_row(
    const float* __restrict row, int32_t row_start, int64_t w, int64_t ow, float* __restrict best,
    int32_t* __restrict best_at) {
  auto fold = [&](int64_t x, float m, int32_t at) {
    const bool r = replaces(m, best[x]);
    best[x] = r ? m : best[x];
    best_at[x] = r ? row_start + at : best_at[x];
  };
  // x = 0: columns 0 and 1 (the padding's column -1 never wins).
  {
    float m = row[0];
    int32_t at = 0;
    if (w > 1 && replaces(row[1], m)) m = row[1], at = 1;
    fold(0, m, at);
  }
  const int64_t last = (2 * (ow - 1) + 1 < w) ? ow : ow - 1;  // columns with all three in range
  for (int64_t x = 1; x < last; ++x) {
    const float a = row[2 * x - 1], b = row[2 * x], c = row[2 * x + 1];
    float m = a;
    int32_t at = static_cast<int32_t>(2 * x - 1);
    bool r = replaces(b, m);
    m = r ? b : m;
    at = r ? static_cast<int32_t>(2 * x) : at;
    r = replaces(c, m);
    m = r ? c : m;
    at = r ? static_cast<int32_t>(2 * x + 1) : at;
    const bool rb = replaces(m, best[x]);
    best[x] = rb ? m : best[x];
    best_at[x] = rb ? row_start + at : best_at[x];
  }
  if (last < ow && ow > 1) {  // the right edge: columns 2x - 1 and 2x only
    const int64_t x = ow - 1;
    float m = row[2 * x - 1];
    int32_t at = static_cast<int32_t>(2 * x - 1);
    if (2 * x < w && replaces(row[2 * x], m)) m = row[2 * x], at = static_cast<int32_t>(2 * x);
    fold(x, m, at);
  }
}

// One plane, as float32 rows: the output row takes its input rows in order, so the winner is
// ATen's: the first row holding the maximum, the leftmost element of it in that row.
template <typename T>
void pool_plane(const T* in, T* out, int64_t* indices, int64_t h, int64_t w, int64_t oh, int64_t ow,
                float* row_buffer, float* best, int32_t* best_at) {
  for (int64_t y = 0; y < oh; ++y) {
    const int64_t y0 = std::max<int64_t>(y * kStride - kPadding, 0);
    const int64_t y1 = std::min(y * kStride - kPadding + kKernel, h);
    for (int64_t x = 0; x < ow; ++x) {
      best[x] = -std::numeric_limits<float>::infinity();
      best_at[x] = static_cast<int32_t>(y0 * w + std::max<int64_t>(x * kStride - kPadding, 0));
    }
    for (int64_t iy = y0; iy < y1; ++iy) {
      const float* row;
      if constexpr (std::is_same_v<T, float>) {
        row = in + iy * w;
      } else {
        for (int64_t i = 0; i < w; ++i) row_buffer[i] = static_cast<float>(in[iy * w + i]);
        row = row_buffer;
      }
      fold_row(row, static_cast<int32_t>(iy * w), w, ow, best, best_at);
    }
    for (int64_t x = 0; x < ow; ++x) {
      out[y * ow + x] = static_cast<T>(best[x]);
      indices[y * ow + x] = best_at[x];
    }
  }
}

class MaxPool : public torch::autograd::Function<MaxPool> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    const int64_t oh = pooled(h), ow = pooled(w);
    torch::Tensor out = torch::empty({n, c, oh, ow}, x.options());
    torch::Tensor indices = torch::empty({n, c, oh, ow}, x.options().dtype(torch::kLong));
    auto pool = [&](auto* in, auto* o) {
      int64_t* idx = indices.data_ptr<int64_t>();
      at::parallel_for(0, n * c, 16, [&](int64_t begin, int64_t end) {
        std::vector<float> row(w), best(ow);
        std::vector<int32_t> best_at(ow);
        for (int64_t p = begin; p < end; ++p)
          pool_plane(in + p * h * w, o + p * oh * ow, idx + p * oh * ow, h, w, oh, ow, row.data(),
                     best.data(), best_at.data());
      });
    };
    if (x.scalar_type() == at::kFloat)
      pool(x.data_ptr<float>(), out.data_ptr<float>());
    else
      pool(x.data_ptr<at::BFloat16>(), out.data_ptr<at::BFloat16>());
    ctx->save_for_backward({x, indices});
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    return {at::max_pool2d_with_indices_backward(grads[0], saved[0], {kKernel, kKernel},
                                                 {kStride, kStride}, {kPadding, kPadding}, {1, 1},
                                                 false, saved[1])};
  }
};

}  // namespace

torch::Tensor max_pool_3x3_s2(const torch::Tensor& x) {
  // int32 positions inside a plane: planes up to 2^31 pixels.
  const bool ours = x.is_cpu() && x.dim() == 4 && x.is_contiguous() &&
                    x.size(2) * x.size(3) < (int64_t{1} << 31) &&
                    (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
  if (!ours) return torch::max_pool2d(x, kKernel, kStride, kPadding);
  return MaxPool::apply(x);
}

}  // namespace runner::models
