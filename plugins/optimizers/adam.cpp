// `adam` and `adamw`: torch.optim.Adam (weight decay added to the gradient) and AdamW
// (decoupled weight decay, lr * weight_decay * param subtracted), stepped by ATen's fused kernels.

#include <torch/torch.h>

#include "optimizers/adam_with_copy.hpp"
#include "optimizers/common.hpp"
#include "optimizers/fused_adam.hpp"
#include "runner/models/compute_copies.hpp"
#include "runner/optim/optimizer.hpp"

namespace runner::optim {

namespace {

template <class Options, class Optimizer>
std::unique_ptr<optim::Optimizer> make_adam(const nlohmann::json& params,
                                            torch::nn::Module& model) {
  const double lr = params.at("lr").get<double>();
  const auto betas = params.at("betas").get<std::vector<double>>();
  const double eps = params.at("eps").get<double>();
  const bool amsgrad = params.at("amsgrad").get<bool>();
  auto make_options = [&](double weight_decay) {
    return Options(lr)
        .betas(std::make_tuple(betas.at(0), betas.at(1)))
        .eps(eps)
        .weight_decay(weight_decay)
        .amsgrad(amsgrad);
  };
  auto groups = configured_groups<Options>(params, model, make_options);
  return std::make_unique<Optimizer>(std::move(groups), make_options(0.0));
}

}  // namespace

void add_adam_optimizers(Registry<OptimizerFactory>& registry) {
  models::set_compute_copy_writer(adam_with_copy_description);
  registry.add(
      "adam", make_adam<torch::optim::AdamOptions, FusedAdamL2>,
      schemas::optimizer(1e-3, 0.0, schemas::merged(adam_properties(), param_groups_property())),
      "Adam; weight decay is added to the gradient (L2), as torch.optim.Adam");
  registry.add(
      "adamw", make_adam<torch::optim::AdamWOptions, FusedAdamW>,
      schemas::optimizer(1e-3, 0.01, schemas::merged(adam_properties(), param_groups_property()),
                         {"bias", "norm"}),
      "AdamW; decoupled weight decay (param -= lr * weight_decay * param)");
}

}  // namespace runner::optim
