// The crossover of plugins/models/small_output_conv: one convolution's forward + backward (input
// and weight gradients) through ATen (oneDNN on x86) against the GEMM form, per shape of the
// native ResNets' convolutions at 56 px, batch 16, 1 thread, fp32 and bf16 autocast.
// Usage: conv_gemm_bench [rounds=5] [reps=10]
// Prints a markdown table: ms per forward + backward (median of interleaved rounds) and the ratio.

#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench_timing.hpp"

#include "models/small_output_conv.hpp"
#include "train/autocast_guard.hpp"

namespace {

struct Shape {
  int64_t in_channels, size, out_channels, kernel, stride;
};

double time_ms(torch::nn::Conv2d& conv, const torch::Tensor& x, bool gemm, bool bf16, int reps) {
  runner::models::set_gemm_output_pixels(gemm ? 1 << 30 : 0);
  auto pass = [&] {
    torch::Tensor y;
    {
      runner::train::AutocastGuard autocast(
          bf16 ? runner::config::Precision::kBf16 : runner::config::Precision::kFp32, torch::kCPU);
      y = runner::models::conv2d(*conv, x);
    }
    y.backward(torch::ones_like(y));
    conv->weight.mutable_grad().reset();
  };
  return runner::bench::mean_ms(pass, reps);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 5;
  const int reps = argc > 2 ? std::stoi(argv[2]) : 10;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  // in, size, out, kernel, stride: resnet18/50's convolutions at 56 px with few output pixels,
  // and the next larger ones.
  const std::vector<Shape> shapes = {
      {512, 2, 512, 3, 1},  {256, 4, 512, 3, 2},  {512, 4, 512, 3, 2}, {1024, 4, 2048, 1, 2},
      {512, 2, 2048, 1, 1}, {2048, 2, 512, 1, 1}, {256, 4, 512, 1, 2}, {256, 4, 256, 3, 1},
      {1024, 4, 256, 1, 1}, {128, 7, 256, 3, 2},  {128, 7, 128, 3, 1}, {64, 14, 64, 3, 1}};
  std::printf("| input | kernel | output | precision | ATen ms | GEMM ms | ATen / GEMM |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const bool bf16 : {false, true}) {
    for (const auto& s : shapes) {
      torch::nn::Conv2d conv(torch::nn::Conv2dOptions(s.in_channels, s.out_channels, s.kernel)
                                 .stride(s.stride)
                                 .padding(s.kernel / 2)
                                 .bias(false));
      const torch::Tensor x = torch::randn({16, s.in_channels, s.size, s.size}).requires_grad_();
      std::vector<double> aten, gemm;
      for (int r = 0; r < rounds; ++r) {
        aten.push_back(time_ms(conv, x, false, bf16, reps));
        gemm.push_back(time_ms(conv, x, true, bf16, reps));
      }
      const int64_t out = (s.size + 2 * (s.kernel / 2) - s.kernel) / s.stride + 1;
      std::printf("| 16x%lldx%lldx%lld | %lldx%lld/%lld | %lldx%lld | %s | %.2f | %.2f | %.2f |\n",
                  (long long)s.in_channels, (long long)s.size, (long long)s.size,
                  (long long)s.kernel, (long long)s.kernel, (long long)s.stride, (long long)out,
                  (long long)out, bf16 ? "bf16" : "fp32", runner::bench::median(aten),
                  runner::bench::median(gemm),
                  runner::bench::median(aten) / runner::bench::median(gemm));
    }
  }
  return 0;
}
