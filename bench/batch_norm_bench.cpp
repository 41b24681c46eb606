// runner's training-mode BatchNorm2d (+ ReLU) CPU kernel (runner/src/models/batch_norm_cpu.cpp)
// against ATen's batch_norm + relu: forward + backward per shape of the native ResNets at 56 px,
// batch 16, 1 thread, fp32 and bf16 inputs.
// Usage: batch_norm_bench [rounds=5] [reps=20]. Prints a markdown table (medians).

#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench_timing.hpp"

#include "models/batch_norm_cpu.hpp"

namespace {

double time_ms(bool ours, const torch::Tensor& x0, const torch::Tensor& w, const torch::Tensor& b,
               int reps) {
  torch::Tensor rm = torch::zeros({x0.size(1)}), rv = torch::ones({x0.size(1)});
  auto pass = [&] {
    torch::Tensor x = x0.detach().requires_grad_();
    torch::Tensor y = ours
                          ? runner::models::cpu_batch_norm_train(x, w, b, rm, rv, 0.1, 1e-5, true)
                          : torch::relu(torch::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5, false));
    y.backward(torch::ones_like(y));
    w.mutable_grad().reset();
    b.mutable_grad().reset();
  };
  return runner::bench::mean_ms(pass, reps);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 5;
  const int reps = argc > 2 ? std::stoi(argv[2]) : 20;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 28}, {64, 14}, {128, 7},
                                                           {256, 4}, {512, 2}, {2048, 2}};
  std::printf("| input | dtype | ATen batch_norm + relu ms | runner ms | ATen / runner |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (auto type : {torch::kFloat, torch::kBFloat16}) {
    for (const auto& [channels, size] : shapes) {
      const torch::Tensor x = torch::randn({16, channels, size, size}).to(type);
      const torch::Tensor w = torch::rand({channels}).requires_grad_();
      const torch::Tensor b = torch::randn({channels}).requires_grad_();
      std::vector<double> aten, ours;
      for (int r = 0; r < rounds; ++r) {
        aten.push_back(time_ms(false, x, w, b, reps));
        ours.push_back(time_ms(true, x, w, b, reps));
      }
      std::printf("| 16x%lldx%lldx%lld | %s | %.3f | %.3f | %.2f |\n", (long long)channels,
                  (long long)size, (long long)size, type == torch::kFloat ? "fp32" : "bf16",
                  runner::bench::median(aten), runner::bench::median(ours),
                  runner::bench::median(aten) / runner::bench::median(ours));
    }
  }
  return 0;
}
