#pragma once

#include "runner/registries.hpp"

namespace runner::losses {

void add_cross_entropy_loss(Registry<LossFactory>& registry);

}  // namespace runner::losses
