// Forward+backward time per batch for every backbone (CPU, fp32, 1 channel, 10 classes).
// Usage: backbones_bench [batch=32] [size=56] [iterations=3] [names...]

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/models/model.hpp"
#include "runner/registries.hpp"

int main(int argc, char** argv) {
  runner::register_builtin_plugins(runner::registries());
  const int64_t batch = argc > 1 ? std::stoll(argv[1]) : 32;
  const int64_t size = argc > 2 ? std::stoll(argv[2]) : 56;
  const int iterations = argc > 3 ? std::stoi(argv[3]) : 3;
  std::vector<std::string> names;
  for (int i = 4; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) names = runner::registries().models.names();

  std::printf("batch %lld, %lldx%lld px, 1 channel, 10 classes, fp32, %d threads\n",
              static_cast<long long>(batch), static_cast<long long>(size),
              static_cast<long long>(size), torch::get_num_threads());
  std::printf("%-16s %12s %14s\n", "backbone", "params (M)", "fwd+bwd (ms)");
  for (const auto& name : names) {
    nlohmann::json params = {{"backbone", name},
                             {"in_chans", 1},
                             {"num_classes", 10},
                             {"drop_path_rate", 0.0},
                             {"pretrained", false}};
    auto model = runner::registries().models.at(name).factory(params);
    model->train();
    int64_t n = 0;
    for (const auto& p : model->parameters()) n += p.numel();
    torch::Tensor x = torch::randn({batch, 1, size, size});
    torch::Tensor y = torch::randint(0, 10, {batch});
    auto step = [&] {
      model->zero_grad();
      torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    };
    step();  // warm-up: allocations and kernel selection
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) step();
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count() /
                iterations;
    std::printf("%-16s %12.2f %14.1f\n", name.c_str(), n / 1e6, ms);
    std::fflush(stdout);
  }
  return 0;
}
