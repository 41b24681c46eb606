// `sgd`: torch.optim.SGD with momentum, dampening, nesterov and coupled weight decay, stepped
// by ATen's fused kernel (FusedSgd).

#include <torch/torch.h>

#include "optimizers/common.hpp"
#include "optimizers/fused_sgd.hpp"
#include "runner/error.hpp"
#include "runner/optim/optimizer.hpp"

namespace runner::optim {

void add_sgd_optimizer(Registry<OptimizerFactory>& registry) {
  nlohmann::json properties = {
      {"momentum",
       {{"type", "number"},
        {"minimum", 0},
        {"default", 0.0},
        {"description", "Momentum factor: buf = momentum * buf + (1 - dampening) * grad."}}},
      {"dampening",
       {{"type", "number"},
        {"minimum", 0},
        {"default", 0.0},
        {"description", "Dampening for momentum (must be 0 with nesterov)."}}},
      {"nesterov",
       {{"type", "boolean"},
        {"default", false},
        {"description", "Nesterov momentum: step along grad + momentum * buf (needs momentum)."}}}};
  registry.add(
      "sgd",
      [](const nlohmann::json& params,
         torch::nn::Module& model) -> std::unique_ptr<optim::Optimizer> {
        const double momentum = params.at("momentum").get<double>();
        const double dampening = params.at("dampening").get<double>();
        const bool nesterov = params.at("nesterov").get<bool>();
        if (nesterov && (momentum <= 0 || dampening != 0))
          throw ConfigError(
              "optimizer.nesterov: Nesterov momentum needs momentum > 0 and dampening 0; set "
              "optimizer.momentum (e.g. 0.9) or nesterov: false");
        const double lr = params.at("lr").get<double>();
        auto make_options = [&](double weight_decay) {
          return torch::optim::SGDOptions(lr)
              .momentum(momentum)
              .dampening(dampening)
              .nesterov(nesterov)
              .weight_decay(weight_decay);
        };
        auto groups = configured_groups<torch::optim::SGDOptions>(params, model, make_options);
        return std::make_unique<FusedSgd>(std::move(groups), make_options(0.0));
      },
      schemas::optimizer(0.01, 0.0, schemas::merged(properties, param_groups_property()),
                         {"bias", "norm"}),
      "stochastic gradient descent with momentum/nesterov, weight decay added to the gradient");
}

}  // namespace runner::optim
