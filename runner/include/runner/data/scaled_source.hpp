#pragma once
// Implemented beside Transform by a first transform that shrinks the image (resize,
// random_resized_crop): it says how much smaller a JPEG may be decoded and still give its output
// from at least as many source pixels, and applies itself to that smaller decode with the draws
// it would have made on the full image. The loader then decodes JPEGs through libjpeg's scaled
// DCT at 1/2, 1/4 or 1/8 (what PIL's draft mode does for timm), much less work than decoding
// every pixel to throw most away. (A second base class, not a virtual of Transform: plugins built
// for ABI 2 keep working.)

#include <opencv2/core.hpp>

#include "runner/data/rng.hpp"

namespace runner::data {

class ScaledSourceTransform {
 public:
  virtual ~ScaledSourceTransform() = default;
  /// The largest reduction r in {1, 2, 4, 8} of a rows x cols source (decoded to
  /// ceil(rows / r) x ceil(cols / r)) from which this transform's output still samples at least
  /// one source pixel per output pixel, given the draws `rng` (a copy of the sample's stream)
  /// would make on the full source.
  virtual int source_reduction(Rng rng, int rows, int cols) const = 0;
  /// apply() for a rows x cols source decoded at 1/reduction into `image`: the same draws as on
  /// the full source (from `rng`, advanced as apply() advances it), the geometry scaled.
  virtual void apply_reduced(cv::Mat& image, Rng& rng, int rows, int cols, int reduction) const = 0;
};

}  // namespace runner::data
