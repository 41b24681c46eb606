#include "builtins.hpp"

namespace runner {

void register_builtin_losses(Registry<LossFactory>& registry) { (void)registry; }

}  // namespace runner
