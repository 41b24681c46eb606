#include "models/batch_norm_cpu.hpp"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace runner::models {
namespace {

std::atomic<bool> kernel_on{true};

// The inner loops, over one plane of n values (float32 or a float32 copy of bf16), compiled for
// AVX-512, AVX2 and the baseline and picked at load time (the build targets plain x86-64). Eight
// partial sums per loop so that the compiler can vectorise a float reduction.
constexpr int kLanes = 16;

__attribute__((target_clones("avx512f", "avx2", "default"))) void plane_moments(
    const float* __restrict x, int64_t n, float* sum_out, float* m2_out) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  float sum = 0;
  for (int j = 0; j < kLanes; ++j) sum += acc[j];
  for (; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float dev[kLanes] = {};
  i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - mean;
      dev[j] += d * d;
    }
  float m2 = 0;
  for (int j = 0; j < kLanes; ++j) m2 += dev[j];
  for (; i < n; ++i) m2 += (x[i] - mean) * (x[i] - mean);
  *sum_out = sum;
  *m2_out = m2;
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void plane_normalise(
    const float* __restrict x, float* __restrict y, int64_t n, float scale, float shift,
    bool relu) {
  if (relu) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::max(x[i] * scale + shift, 0.0f);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + shift;
  }
}

// sum(g) and sum(g * (x - mean)) over a plane, g the gradient where `mask` > 0 (the ReLU's
// output; null without a ReLU) and 0 elsewhere.
__attribute__((target_clones("avx512f", "avx2", "default"))) void plane_grad_sums(
    const float* __restrict g, const float* __restrict x, const float* __restrict mask, int64_t n,
    float mean, float* sum_g_out, float* sum_gx_out) {
  float sg[kLanes] = {}, sgx[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float gj = mask == nullptr || mask[i + j] > 0 ? g[i + j] : 0.0f;
      sg[j] += gj;
      sgx[j] += gj * (x[i + j] - mean);
    }
  float sum_g = 0, sum_gx = 0;
  for (int j = 0; j < kLanes; ++j) sum_g += sg[j], sum_gx += sgx[j];
  for (; i < n; ++i) {
    const float gi = mask == nullptr || mask[i] > 0 ? g[i] : 0.0f;
    sum_g += gi;
    sum_gx += gi * (x[i] - mean);
  }
  *sum_g_out = sum_g;
  *sum_gx_out = sum_gx;
}

// dx = k * (g - a - (x - mean) * b), g masked as above.
__attribute__((target_clones("avx512f", "avx2", "default"))) void plane_grad_input(
    const float* __restrict g, const float* __restrict x, const float* __restrict mask,
    float* __restrict dx, int64_t n, float mean, float k, float a, float b) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = mask == nullptr || mask[i] > 0 ? g[i] : 0.0f;
    dx[i] = k * (gi - a - (x[i] - mean) * b);
  }
}

// A plane of T as float32: the data itself, or converted into `buffer`.
template <typename T>
const float* as_float(const T* data, int64_t n, float* buffer) {
  if constexpr (std::is_same_v<T, float>) {
    return data;
  } else {
    for (int64_t i = 0; i < n; ++i) buffer[i] = static_cast<float>(data[i]);
    return buffer;
  }
}

template <typename T>
void store(const float* values, int64_t n, T* out) {
  if constexpr (!std::is_same_v<T, float>)
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(values[i]);
}

struct Sizes {
  int64_t batch, channels, plane;
};

Sizes sizes_of(const torch::Tensor& x) { return {x.size(0), x.size(1), x.size(2) * x.size(3)}; }

template <typename T>
void forward_kernel(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                    double eps, bool relu, torch::Tensor& y, torch::Tensor& mean,
                    torch::Tensor& invstd, torch::Tensor& variance) {
  const Sizes sizes = sizes_of(x);  // plain names: lambdas capture no structured bindings in C++17
  const int64_t n = sizes.batch, c = sizes.channels, hw = sizes.plane;
  const T* in = x.data_ptr<T>();
  T* out = y.data_ptr<T>();
  float* mean_data = mean.data_ptr<float>();
  float* invstd_data = invstd.data_ptr<float>();
  double* var_data = variance.data_ptr<double>();
  const float* w = weight.defined() ? weight.data_ptr<float>() : nullptr;
  const float* b = bias.defined() ? bias.data_ptr<float>() : nullptr;
  at::parallel_for(0, c, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> buffer(std::is_same_v<T, float> ? 0 : 2 * hw);
    for (int64_t ch = c0; ch < c1; ++ch) {
      // Chan et al.: merge each plane's (count, mean, M2) into the channel's, in double.
      double count = 0, m = 0, m2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float* p = as_float(in + (i * c + ch) * hw, hw, buffer.data());
        float sum, plane_m2;
        plane_moments(p, hw, &sum, &plane_m2);
        const double plane_mean = static_cast<double>(sum) / hw;
        const double total = count + hw;
        const double delta = plane_mean - m;
        m += delta * hw / total;
        m2 += plane_m2 + delta * delta * count * hw / total;
        count = total;
      }
      const double var = m2 / count;
      const double inv = 1.0 / std::sqrt(var + eps);
      mean_data[ch] = static_cast<float>(m);
      invstd_data[ch] = static_cast<float>(inv);
      var_data[ch] = var;
      const float scale = static_cast<float>((w ? w[ch] : 1.0) * inv);
      const float shift = static_cast<float>((b ? b[ch] : 0.0) - m * (w ? w[ch] : 1.0) * inv);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t offset = (i * c + ch) * hw;
        const float* p = as_float(in + offset, hw, buffer.data());
        float* q =
            std::is_same_v<T, float> ? reinterpret_cast<float*>(out + offset) : buffer.data() + hw;
        plane_normalise(p, q, hw, scale, shift, relu);
        store(q, hw, out + offset);
      }
    }
  });
}

template <typename T>
void backward_kernel(const torch::Tensor& grad, const torch::Tensor& x, const torch::Tensor& y,
                     const torch::Tensor& weight, const torch::Tensor& mean,
                     const torch::Tensor& invstd, bool relu, torch::Tensor& grad_x,
                     torch::Tensor& grad_w, torch::Tensor& grad_b) {
  const Sizes sizes = sizes_of(x);  // plain names: lambdas capture no structured bindings in C++17
  const int64_t n = sizes.batch, c = sizes.channels, hw = sizes.plane;
  const T* g_data = grad.data_ptr<T>();
  const T* x_data = x.data_ptr<T>();
  const T* y_data = relu ? y.data_ptr<T>() : nullptr;
  T* dx_data = grad_x.defined() ? grad_x.data_ptr<T>() : nullptr;
  const float* mean_data = mean.data_ptr<float>();
  const float* invstd_data = invstd.data_ptr<float>();
  const float* w = weight.defined() ? weight.data_ptr<float>() : nullptr;
  float* gw = grad_w.data_ptr<float>();
  float* gb = grad_b.data_ptr<float>();
  const double count = static_cast<double>(n * hw);
  at::parallel_for(0, c, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> buffer(std::is_same_v<T, float> ? 0 : 4 * hw);
    float* gbuf = buffer.data();
    float* xbuf = gbuf + hw;
    float* ybuf = xbuf + hw;
    float* dxbuf = ybuf + hw;
    for (int64_t ch = c0; ch < c1; ++ch) {
      const float mu = mean_data[ch];
      double sum_g = 0, sum_gx = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t offset = (i * c + ch) * hw;
        float sg, sgx;
        plane_grad_sums(as_float(g_data + offset, hw, gbuf), as_float(x_data + offset, hw, xbuf),
                        relu ? as_float(y_data + offset, hw, ybuf) : nullptr, hw, mu, &sg, &sgx);
        sum_g += sg;
        sum_gx += sgx;
      }
      const double inv = invstd_data[ch];
      gb[ch] = static_cast<float>(sum_g);
      gw[ch] = static_cast<float>(sum_gx * inv);
      if (dx_data == nullptr) continue;
      const float k = static_cast<float>((w ? w[ch] : 1.0) * inv);
      const float a = static_cast<float>(sum_g / count);
      const float b = static_cast<float>(sum_gx * inv * inv / count);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t offset = (i * c + ch) * hw;
        float* d = std::is_same_v<T, float> ? reinterpret_cast<float*>(dx_data + offset) : dxbuf;
        plane_grad_input(as_float(g_data + offset, hw, gbuf), as_float(x_data + offset, hw, xbuf),
                         relu ? as_float(y_data + offset, hw, ybuf) : nullptr, d, hw, mu, k, a, b);
        store(d, hw, dx_data + offset);
      }
    }
  });
}

class BatchNormCpu : public torch::autograd::Function<BatchNormCpu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& running_mean, const torch::Tensor& running_var,
                               double momentum, double eps, bool relu, bool affine) {
    const int64_t channels = x.size(1);
    torch::Tensor y = torch::empty_like(x, at::MemoryFormat::Contiguous);
    torch::Tensor mean = torch::empty({channels}, x.options().dtype(at::kFloat));
    torch::Tensor invstd = torch::empty({channels}, x.options().dtype(at::kFloat));
    torch::Tensor variance = torch::empty({channels}, x.options().dtype(at::kDouble));
    const torch::Tensor w = affine ? weight : torch::Tensor();
    const torch::Tensor b = affine ? bias : torch::Tensor();
    if (x.scalar_type() == at::kFloat)
      forward_kernel<float>(x, w, b, eps, relu, y, mean, invstd, variance);
    else
      forward_kernel<at::BFloat16>(x, w, b, eps, relu, y, mean, invstd, variance);
    if (running_mean.numel() > 0) {
      const double count = static_cast<double>(x.numel() / channels);
      running_mean.mul_(1 - momentum).add_(mean.to(running_mean.scalar_type()), momentum);
      running_var.mul_(1 - momentum)
          .add_((variance * (count / (count - 1))).to(running_var.scalar_type()), momentum);
    }
    ctx->save_for_backward({x, relu ? y : torch::Tensor(), w, mean, invstd});
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["affine"] = affine;
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const bool relu = ctx->saved_data["relu"].toBool();
    const bool affine = ctx->saved_data["affine"].toBool();
    const torch::Tensor grad = grads[0].to(x.scalar_type()).contiguous();
    const int64_t channels = x.size(1);
    torch::Tensor grad_x;
    if (ctx->needs_input_grad(0)) grad_x = torch::empty_like(x, at::MemoryFormat::Contiguous);
    torch::Tensor grad_w = torch::empty({channels}, x.options().dtype(at::kFloat));
    torch::Tensor grad_b = torch::empty({channels}, x.options().dtype(at::kFloat));
    if (x.scalar_type() == at::kFloat)
      backward_kernel<float>(grad, x, saved[1], saved[2], saved[3], saved[4], relu, grad_x, grad_w,
                             grad_b);
    else
      backward_kernel<at::BFloat16>(grad, x, saved[1], saved[2], saved[3], saved[4], relu, grad_x,
                                    grad_w, grad_b);
    if (!affine) grad_w = grad_b = torch::Tensor();
    return {grad_x,          grad_w,          grad_b,          torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void set_cpu_batch_norm(bool on) { kernel_on.store(on); }

bool cpu_batch_norm_applies(const torch::Tensor& input, const torch::Tensor& weight) {
  return kernel_on.load() && input.is_cpu() && input.dim() == 4 && input.is_contiguous() &&
         input.scalar_type() == at::kFloat &&
         input.numel() / std::max<int64_t>(input.size(1), 1) > 1 &&
         (!weight.defined() || weight.scalar_type() == at::kFloat);
}

torch::Tensor cpu_batch_norm_train(const torch::Tensor& input, const torch::Tensor& weight,
                                   const torch::Tensor& bias, const torch::Tensor& running_mean,
                                   const torch::Tensor& running_var, double momentum, double eps,
                                   bool relu) {
  // An autograd Function takes no undefined tensor: absent ones are empty.
  const auto empty = [](const torch::Tensor& t) { return t.defined() ? t : torch::empty({0}); };
  return BatchNormCpu::apply(input, empty(weight), empty(bias), empty(running_mean),
                             empty(running_var), momentum, eps, relu, weight.defined());
}

}  // namespace runner::models
