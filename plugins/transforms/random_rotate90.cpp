// Transform `random_rotate90`: albumentations' RandomRotate90 (np.rot90 by 0..3 quarter turns).

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class RandomRotate90Transform : public Transform, public BatchedTransform {
 public:
  explicit RandomRotate90Transform(double p) : p_(p) {}
  void apply(cv::Mat& image, Rng& rng) const override {
    double turns = 0;
    draw(rng, image.rows, image.cols, &turns);
    const int k = static_cast<int>(turns);
    if (k == 0) return;
    static const int codes[] = {0, cv::ROTATE_90_COUNTERCLOCKWISE, cv::ROTATE_180,
                                cv::ROTATE_90_CLOCKWISE};
    cv::Mat out;
    cv::rotate(image, out, codes[k]);
    image = out;
  }

  int draws_per_sample() const override { return 1; }
  /// The quarter turns this sample gets (0 when the coin says no).
  void draw(Rng& rng, int64_t /*height*/, int64_t /*width*/, double* out) const override {
    const bool on = draw_coin(rng, p_);
    const int64_t k = rng.uniform_int(0, 3);
    out[0] = on ? static_cast<double>(k) : 0.0;
  }
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    const at::Tensor turns = draws.select(1, 0);
    if (images.size(2) != images.size(3) && turns.fmod(2).ne(0).any().item<bool>())
      throw DataError("random_rotate90 on a batch of " + std::to_string(images.size(2)) + "x" +
                      std::to_string(images.size(3)) +
                      " images: a quarter turn changes their shape, so only square images "
                      "rotate in batches (resize first, or use the loader path: data.device: "
                      "loader)");
    at::Tensor out = images;
    for (int k = 1; k <= 3; ++k)  // np.rot90(image, k) on H, W: counter-clockwise, as cv::rotate
      out = at::where(sample_mask(turns.eq(k), images), images.rot90(k, {2, 3}), out);
    return out;
  }

 private:
  double p_;
};

}  // namespace

void register_random_rotate90(Registry<TransformFactory>& registry) {
  registry.add(
      "random_rotate90",
      [](const nlohmann::json& params) {
        return std::make_shared<RandomRotate90Transform>(params.at("p").get<double>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "Random draws: coin, k = int U[0, 3]; out = np.rot90(in, k): k quarter turns "
        "counter-clockwise (k = 1: out(y, x) = in(x, W-1-y)). Non-square images change shape."},
       {"properties", {{"p", schemas::transform_p(0.5)}}}},
      "Rotate by a random multiple of 90 degrees");
}

}  // namespace runner::data
