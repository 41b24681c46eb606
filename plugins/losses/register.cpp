#include "builtins.hpp"
#include "losses/bce.hpp"
#include "losses/cross_entropy.hpp"

namespace runner {

void register_builtin_losses(Registry<LossFactory>& registry) {
  losses::add_bce_loss(registry);
  losses::add_cross_entropy_loss(registry);
}

}  // namespace runner
