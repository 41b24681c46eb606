// Transforms `horizontal_flip` and `vertical_flip`.

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class FlipTransform : public Transform, public BatchedTransform {
 public:
  FlipTransform(int axis, double p) : axis_(axis), p_(p) {}
  void apply(cv::Mat& image, Rng& rng) const override {
    double flip = 0;
    draw(rng, image.rows, image.cols, &flip);
    if (flip == 0) return;
    cv::Mat out;
    cv::flip(image, out, axis_);
    image = out;
  }

  int draws_per_sample() const override { return 1; }
  void draw(Rng& rng, int64_t /*height*/, int64_t /*width*/, double* out) const override {
    out[0] = draw_coin(rng, p_) ? 1 : 0;
  }
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    // cv::flip code 1 mirrors columns (W, dim 3 of NCHW), 0 rows (H, dim 2).
    const at::Tensor flipped = images.flip({axis_ == 1 ? 3 : 2});
    return at::where(sample_mask(draws.select(1, 0), images), flipped, images);
  }

 private:
  int axis_;  // cv::flip code: 1 mirrors columns, 0 mirrors rows
  double p_;
};

void register_flip(Registry<TransformFactory>& registry, const std::string& name, int axis,
                   const std::string& formula) {
  registry.add(
      name,
      [axis](const nlohmann::json& params) {
        return std::make_shared<FlipTransform>(axis, params.at("p").get<double>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description", formula + " Random draws: coin."},
       {"properties", {{"p", schemas::transform_p(0.5)}}}},
      formula);
}

}  // namespace

void register_flips(Registry<TransformFactory>& registry) {
  register_flip(registry, "horizontal_flip", 1, "Mirrors left-right: out(y, x) = in(y, W-1-x).");
  register_flip(registry, "vertical_flip", 0, "Mirrors top-bottom: out(y, x) = in(H-1-y, x).");
}

}  // namespace runner::data
