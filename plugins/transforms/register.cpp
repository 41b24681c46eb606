#include "builtins.hpp"
#include "transforms/transform_params.hpp"

namespace runner {

void register_builtin_transforms(Registry<TransformFactory>& registry) {
  data::register_flips(registry);
  data::register_random_brightness_contrast(registry);
  data::register_resize(registry);
  data::register_normalize(registry);
  data::register_random_resized_crop(registry);
  data::register_shift_scale_rotate(registry);
  data::register_random_rotate90(registry);
  data::register_to_tensor(registry);
  data::register_random_erasing(registry);
  data::register_rand_augment(registry);
}

}  // namespace runner
