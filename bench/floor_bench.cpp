// The compute floor: forward + backward + the adam plugin's fused step on ready tensors, in one
// process, no loader, no host read per step (as the trainer's step).
// Usage: floor_bench <backbone> <size> <batch> <threads> [steps=20] [warmup=3]
// Prints one JSON line: {"backbone":..., "images_per_s":..., "ms_per_step":...}.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include "config/schema_validator.hpp"
#include "models/batch_norm_cpu.hpp"
#include "models/small_output_conv.hpp"
#include "runner/models/compute_copies.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"
#include "train/autocast_guard.hpp"
#include "util/malloc_tuning.hpp"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: floor_bench <backbone> <size> <batch> <threads> [steps=20] [warmup=3]\n");
    return 2;
  }
  // As runner-engine's main (FLOOR_MALLOC=default: glibc's own behaviour).
  const char* malloc_env = std::getenv("FLOOR_MALLOC");
  if (malloc_env == nullptr || std::string(malloc_env) != "default")
    runner::util::tune_malloc_for_training();
  runner::register_builtin_plugins(runner::registries());
  const std::string name = argv[1];
  const int64_t size = std::stoll(argv[2]);
  const int64_t batch = std::stoll(argv[3]);
  const int threads = std::stoi(argv[4]);
  const int steps = argc > 5 ? std::stoi(argv[5]) : 20;
  const int warmup = argc > 6 ? std::stoi(argv[6]) : 3;
  torch::set_num_threads(threads);
  torch::manual_seed(0);

  const nlohmann::json params = {{"backbone", name},
                                 {"in_chans", 1},
                                 {"num_classes", 10},
                                 {"drop_path_rate", 0.0},
                                 {"pretrained", false}};
  auto model = runner::registries().models.at(name).factory(params);
  // FLOOR_CHANNELS_LAST=1: NHWC weights and inputs, as train.channels_last does in the trainer.
  const char* cl = std::getenv("FLOOR_CHANNELS_LAST");
  const bool channels_last = cl != nullptr && std::string(cl) == "1";
  if (channels_last) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
  model->train();
  // FLOOR_COMPUTE_COPIES=0: autocast casts every weight each forward (no kept bf16 copies).
  const char* copies = std::getenv("FLOOR_COMPUTE_COPIES");
  runner::models::set_compute_copies(copies == nullptr || std::string(copies) != "0");
  // FLOOR_CONV_GEMM=0: every convolution through ATen (no GEMM form for small outputs).
  const char* gemm = std::getenv("FLOOR_CONV_GEMM");
  if (gemm != nullptr && std::string(gemm) == "0") runner::models::set_gemm_output_pixels(0);
  // FLOOR_BN=aten: BatchNorm through ATen in training too (not runner's CPU kernel).
  const char* bn = std::getenv("FLOOR_BN");
  if (bn != nullptr && std::string(bn) == "aten") runner::models::set_cpu_batch_norm(false);
  const auto& adam = runner::registries().optimizers.at("adam");
  // The adam plugin's schema defaults, as a config that names only lr gets them.
  nlohmann::json adam_params = {{"lr", 1e-3}};
  runner::config::apply_schema_defaults(adam_params, adam.schema);
  auto optimizer = adam.factory(adam_params, *model);
  const torch::Tensor lr = torch::full({}, 1e-3, torch::kDouble);
  torch::Tensor x = torch::randn({batch, 1, size, size});
  if (channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor y = torch::randint(0, 10, {batch});
  // FLOOR_PRECISION=bf16|fp16: the forward under autocast, as precision: does in the trainer.
  const char* precision_env = std::getenv("FLOOR_PRECISION");
  const std::string precision = precision_env ? precision_env : "fp32";
  // FLOOR_OPTIMIZER=0: no optimizer step (its share of the floor step is the difference).
  const char* optimizer_env = std::getenv("FLOOR_OPTIMIZER");
  const bool optimizer_step = optimizer_env == nullptr || std::string(optimizer_env) != "0";
  auto step = [&] {
    optimizer->torch_optimizer().zero_grad();  // set to none, as the trainer
    torch::Tensor logits;
    {
      runner::train::AutocastGuard autocast(runner::config::parse_precision(precision),
                                            torch::kCPU);
      logits = model->forward(x);
    }
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), y);
    loss.backward();
    if (optimizer_step) optimizer->update(lr, {});
    return loss;
  };
  for (int i = 0; i < warmup; ++i) step();  // allocations and kernel selection
  // FLOOR_TRACE=file.json: the timed steps' ATen ops as a Chrome trace (slower: compare traces,
  // not their images/s).
  const char* trace = std::getenv("FLOOR_TRACE");
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
  if (trace != nullptr) profile = std::make_unique<torch::autograd::profiler::RecordProfile>(trace);
  const auto start = std::chrono::steady_clock::now();
  torch::Tensor last;
  for (int i = 0; i < steps; ++i) last = step();
  profile.reset();
  (void)last.item<double>();  // wait for the last step (a no-op on CPU)
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "{\"backbone\":\"%s\",\"size\":%lld,\"batch\":%lld,\"threads\":%d,\"steps\":%d,"
      "\"precision\":\"%s\",\"channels_last\":%s,\"compute_copies\":%s,\"conv_gemm\":%s,"
      "\"images_per_s\":%.3f,\"ms_per_step\":%.3f}\n",
      name.c_str(), static_cast<long long>(size), static_cast<long long>(batch), threads, steps,
      precision.c_str(), channels_last ? "true" : "false",
      runner::models::compute_copies_on() ? "true" : "false",
      runner::models::gemm_output_pixels() > 0 ? "true" : "false", steps * batch / seconds,
      1000.0 * seconds / steps);
  return 0;
}
