#include "builtins.hpp"
#include "optimizers/common.hpp"

namespace runner {

void register_builtin_optimizers(Registry<OptimizerFactory>& registry) {
  optimizers::add_sgd_optimizer(registry);
  optimizers::add_adam_optimizers(registry);
}

}  // namespace runner
