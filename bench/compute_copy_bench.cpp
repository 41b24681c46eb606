// What the bf16 compute copies save per step, measured where they act: the optimizer's update
// and the forward's casts of the weights the MLP reads, over a real model's parameters
// (convnext_small by default), 1 thread. Two ways, interleaved:
//   cast:  ATen's fused Adam, then every copied weight cast to a fresh bf16 tensor (what bf16
//          autocast does in each forward);
//   copy:  the adam plugin's update writing the kept copies in the same pass (the forward then
//          reads them as they are).
// Usage: compute_copy_bench [backbone=convnext_small] [rounds=5] [steps=5]
// Prints one JSON line per round and a last line with the medians.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "config/schema_validator.hpp"
#include "runner/models/compute_copies.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  runner::register_builtin_plugins(runner::registries());
  const std::string name = argc > 1 ? argv[1] : "convnext_small";
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 5;
  const int steps = argc > 3 ? std::stoi(argv[3]) : 5;
  torch::set_num_threads(1);
  torch::manual_seed(0);
  const nlohmann::json model_params = {{"backbone", name},
                                       {"in_chans", 1},
                                       {"num_classes", 10},
                                       {"drop_path_rate", 0.0},
                                       {"pretrained", false}};
  const auto& adam = runner::registries().optimizers.at("adam");
  nlohmann::json adam_params = {{"lr", 1e-3}};
  runner::config::apply_schema_defaults(adam_params, adam.schema);
  const torch::Tensor lr = torch::full({}, 1e-3, torch::kDouble);

  // One model and optimizer per way; the same gradients every step.
  struct Way {
    std::shared_ptr<runner::models::Model> model;
    std::unique_ptr<runner::optim::Optimizer> optimizer;
    std::vector<torch::Tensor> copied;  // the weights the forward reads as bf16 copies
  };
  auto make_way = [&](bool copies) {
    runner::models::set_compute_copies(copies);
    Way w;
    w.model = runner::registries().models.at(name).factory(model_params);
    w.model->train();
    w.optimizer = adam.factory(adam_params, *w.model);
    // One small forward under bf16 autocast registers the weights the model reads as copies.
    {
      at::autocast::set_autocast_enabled(at::kCPU, true);
      at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
      torch::NoGradGuard no_grad;
      (void)w.model->forward(torch::randn({1, 1, 32, 32}));
      at::autocast::set_autocast_enabled(at::kCPU, false);
      at::autocast::clear_cache();
    }
    // The weights read as copies; the cast way casts the same ones (its own are not kept).
    for (auto& p : w.model->parameters()) {
      p.mutable_grad() = torch::randn_like(p) * 1e-3;
      if (runner::models::compute_copy_to_write(p).defined()) w.copied.push_back(p);
    }
    return w;
  };
  Way copy_way = make_way(true);
  Way cast_way = make_way(false);
  {
    const auto copy_params = copy_way.model->named_parameters();
    const auto cast_params = cast_way.model->named_parameters();
    for (const auto& item : copy_params)
      for (const auto& kept : copy_way.copied)
        if (item.value().is_same(kept)) cast_way.copied.push_back(cast_params[item.key()]);
  }
  int64_t copied_numel = 0;
  for (const auto& p : copy_way.copied) copied_numel += p.numel();

  auto time_steps = [&](auto&& step) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) step();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
               .count() /
           steps;
  };
  std::vector<double> cast_ms, copy_ms;
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up
    runner::models::set_compute_copies(false);
    const double cast = time_steps([&] {
      cast_way.optimizer->update(lr, {});
      torch::NoGradGuard no_grad;
      for (const auto& p : cast_way.copied) (void)p.to(torch::kBFloat16);
    });
    runner::models::set_compute_copies(true);
    const double copy = time_steps([&] { copy_way.optimizer->update(lr, {}); });
    if (round == 0) continue;
    cast_ms.push_back(cast);
    copy_ms.push_back(copy);
    std::printf("{\"round\":%d,\"cast_ms\":%.2f,\"copy_ms\":%.2f}\n", round, cast, copy);
  }
  std::printf(
      "{\"backbone\":\"%s\",\"copied_params\":%lld,\"steps\":%d,\"rounds\":%d,"
      "\"cast_ms_median\":%.2f,\"copy_ms_median\":%.2f,\"saved_ms\":%.2f}\n",
      name.c_str(), static_cast<long long>(copied_numel), steps, rounds, median(cast_ms),
      median(copy_ms), median(cast_ms) - median(copy_ms));
  return 0;
}
