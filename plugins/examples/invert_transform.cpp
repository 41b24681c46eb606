// Example out-of-tree plugin: registers the transform `invert` (x -> max - x, with probability
// p), used by tests/integration to prove that shared-library plugins load and run. Its schema
// comes from the public helpers every built-in transform uses.

#include <opencv2/core.hpp>

#include "runner/data/transform.hpp"
#include "runner/plugin_api.hpp"
#include "runner/plugin_schemas.hpp"

namespace {

class InvertTransform : public runner::data::Transform {
 public:
  explicit InvertTransform(double p) : p_(p) {}
  void apply(cv::Mat& image, runner::data::Rng& rng) const override {
    // The coin is drawn for every sample, so later transforms see the same stream whatever p.
    if (!(rng.uniform() < p_)) return;
    const double max_value = image.depth() == CV_8U ? 255.0 : 1.0;
    cv::Mat out;
    image.convertTo(out, image.type(), -1.0, max_value);
    image = out;
  }

 private:
  double p_;
};

void register_example(runner::Registries& r) {
  r.transforms.add(
      "invert",
      [](const nlohmann::json& params) {
        return std::make_shared<InvertTransform>(params.at("p").get<double>());
      },
      runner::schemas::closed_object({{"p", runner::schemas::transform_p(1.0)}},
                                     "out = max - in (max 255 for u8 images, else 1)."),
      "Inverts intensities (example shared-library plugin).");
}

}  // namespace

RUNNER_PLUGIN(register_example)
