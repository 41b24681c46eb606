#include "builtins.hpp"
#include "optimizers/common.hpp"

namespace runner {

void register_builtin_optimizers(Registry<OptimizerFactory>& registry) {
  optim::add_sgd_optimizer(registry);
  optim::add_adam_optimizers(registry);
}

}  // namespace runner
