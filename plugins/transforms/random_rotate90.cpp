// Transform `random_rotate90`: albumentations' RandomRotate90 (np.rot90 by 0..3 quarter turns).

#include <opencv2/core.hpp>

#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class RandomRotate90Transform : public Transform {
 public:
  explicit RandomRotate90Transform(double p) : p_(p) {}
  void apply(cv::Mat& image, Rng& rng) const override {
    const bool on = draw_coin(rng, p_);
    const int k = static_cast<int>(rng.uniform_int(0, 3));
    if (!on || k == 0) return;
    static const int codes[] = {0, cv::ROTATE_90_COUNTERCLOCKWISE, cv::ROTATE_180,
                                cv::ROTATE_90_CLOCKWISE};
    cv::Mat out;
    cv::rotate(image, out, codes[k]);
    image = out;
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
       {"properties", {{"p", p_schema(0.5)}}}},
      "Rotate by a random multiple of 90 degrees");
}

}  // namespace runner::data
