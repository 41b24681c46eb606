#include "builtins.hpp"
#include "models/models.hpp"

namespace runner {

void register_builtin_models(Registry<ModelFactory>& registry) {
  models::register_convnext(registry);
  models::register_resnet(registry);
  models::register_small_cnn(registry);
  models::register_scripted(registry);
}

}  // namespace runner
