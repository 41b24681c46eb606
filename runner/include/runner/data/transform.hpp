#pragma once
// What a transform plugin provides: an in-place change of one image, random ones drawing only
// from the sample's own Rng (so results do not depend on threads).

#include <string>

#include <opencv2/core.hpp>

#include "runner/data/rng.hpp"

namespace runner::data {

class Transform {
 public:
  virtual ~Transform() = default;
  /// Transforms `image` in place (it may be replaced by a new Mat of another size or depth).
  /// Every random choice must come from `rng`, drawn in the same order on every call.
  virtual void apply(cv::Mat& image, Rng& rng) const = 0;
};

}  // namespace runner::data
