#pragma once
// The boxes timm's RandomErasing (timm/data/random_erasing.py) erases in one image, drawn from
// any source of its three kinds of random numbers (the sample's Rng in runs; timm's recorded
// draws in the parity test).

#include <cmath>
#include <cstdint>
#include <vector>

namespace runner::data {

struct ErasingOptions {
  double p = 0.5;
  double min_area = 0.02, max_area = 1.0 / 3.0;
  double min_aspect = 0.3, max_aspect = 1.0 / 0.3;
  int64_t min_count = 1, max_count = 1;
};

struct EraseBox {
  int64_t top = 0, left = 0, h = 0, w = 0;
};

/// timm's _erase for an image of `img_h` x `img_w`: with probability p, `count` (min..max) boxes
/// each of U(min_area, max_area) / count of the image with a log-uniform aspect, up to 10 tries
/// each to fit. `Random` has uniform() (random.random), uniform(a, b) (random.uniform) and
/// randint(a, b) (random.randint, both ends included). Returns the boxes in order (later ones
/// paint over earlier ones); none when the coin says no.
template <class Random>
std::vector<EraseBox> draw_erase_boxes(Random& random, const ErasingOptions& o, int64_t img_h,
                                       int64_t img_w) {
  std::vector<EraseBox> boxes;
  if (!(random.uniform() < o.p)) return boxes;
  const double area = static_cast<double>(img_h * img_w);
  const int64_t count =
      o.min_count == o.max_count ? o.min_count : random.randint(o.min_count, o.max_count);
  const double log_lo = std::log(o.min_aspect), log_hi = std::log(o.max_aspect);
  for (int64_t i = 0; i < count; ++i) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double target = random.uniform(o.min_area, o.max_area) * area / count;
      const double aspect = std::exp(random.uniform(log_lo, log_hi));
      // Python's round: half to even, as std::nearbyint in the default rounding mode.
      const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target * aspect)));
      const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target / aspect)));
      if (w < img_w && h < img_h) {
        EraseBox box;
        box.h = h, box.w = w;
        box.top = random.randint(0, img_h - h);
        box.left = random.randint(0, img_w - w);
        boxes.push_back(box);
        break;
      }
    }
  }
  return boxes;
}

}  // namespace runner::data
