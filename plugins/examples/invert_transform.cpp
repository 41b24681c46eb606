// Example out-of-tree plugin: registers the transform `invert` (x -> max - x), used by
// tests/integration to prove that shared-library plugins load and run.

#include <opencv2/core.hpp>

#include "runner/data/transform.hpp"
#include "runner/plugin_api.hpp"

namespace {

class InvertTransform : public runner::data::Transform {
 public:
  void apply(cv::Mat& image, runner::data::Rng& /*rng*/) const override {
    const double max_value = image.depth() == CV_8U ? 255.0 : 1.0;
    cv::Mat out;
    image.convertTo(out, image.type(), -1.0, max_value);
    image = out;
  }
};

void register_example(runner::Registries& r) {
  r.transforms.add(
      "invert", [](const nlohmann::json&) { return std::make_shared<InvertTransform>(); },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description", "out = max - in (max 255 for u8 images, else 1)."},
       {"properties", nlohmann::json::object()}},
      "Inverts intensities (example shared-library plugin).");
}

}  // namespace

RUNNER_PLUGIN(register_example)
