#pragma once
// Parameter pieces shared by the transform plugins: the `p` coin (its schema is public:
// runner/plugin_schemas.hpp), OpenCV interpolation and border names, and the registration
// function of each transform.

#include <string>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "runner/data/rng.hpp"
#include "runner/plugin_schemas.hpp"
#include "runner/registries.hpp"

namespace runner::data {

/// Draws one uniform number and says whether the transform applies (u < p). Always draws, so
/// the stream position never depends on p.
inline bool draw_coin(Rng& rng, double p) { return rng.uniform() < p; }

/// [B, 1, 1, 1] bool on `like`'s device: which samples a batched transform changes, from their
/// draws (non-zero: yes).
at::Tensor sample_mask(const at::Tensor& draws_column, const at::Tensor& like);

/// cv::InterpolationFlags of nearest|linear|cubic|area|lanczos4|linear_exact|nearest_exact.
int interpolation_flag(const std::string& name);
/// Schema of an `interpolation` property with the given default.
nlohmann::json interpolation_schema(const std::string& default_name);

/// cv::BorderTypes of constant|replicate|reflect|wrap|reflect_101.
int border_flag(const std::string& name);

void register_flips(Registry<TransformFactory>& registry);
void register_random_brightness_contrast(Registry<TransformFactory>& registry);
void register_resize(Registry<TransformFactory>& registry);
void register_normalize(Registry<TransformFactory>& registry);
void register_random_resized_crop(Registry<TransformFactory>& registry);
void register_shift_scale_rotate(Registry<TransformFactory>& registry);
void register_random_rotate90(Registry<TransformFactory>& registry);
void register_to_tensor(Registry<TransformFactory>& registry);
void register_random_erasing(Registry<TransformFactory>& registry);
void register_rand_augment(Registry<TransformFactory>& registry);

/// The largest reduction r in {1, 2, 4, 8} at which a `width` x `height` region of the source
/// still has at least as many pixels as the `out_width` x `out_height` it is resized to
/// (ScaledSourceTransform's rule).
inline int largest_source_reduction(double width, double height, int out_width, int out_height) {
  for (int r : {8, 4, 2})
    if (width / r >= out_width && height / r >= out_height) return r;
  return 1;
}

}  // namespace runner::data
