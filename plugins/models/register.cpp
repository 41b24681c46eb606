#include "builtins.hpp"
#include "models/models.hpp"

namespace runner {

void register_builtin_models(Registry<ModelFactory>& registry) {
  models::register_convnext(registry);
  models::register_resnet(registry);
  models::register_small_cnn(registry);
}

}  // namespace runner
