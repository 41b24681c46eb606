#include "builtins.hpp"

namespace runner {

void register_builtin_optimizers(Registry<OptimizerFactory>& registry) { (void)registry; }

}  // namespace runner
