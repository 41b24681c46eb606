#pragma once

#include "runner/registries.hpp"

namespace runner::losses {

void add_bce_loss(Registry<LossFactory>& registry);

}  // namespace runner::losses
