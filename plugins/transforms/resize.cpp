// Transform `resize`: cv::resize to a fixed size.

#include <opencv2/imgproc.hpp>

#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class ResizeTransform : public Transform {
 public:
  ResizeTransform(int height, int width, int interpolation)
      : height_(height), width_(width), interpolation_(interpolation) {}
  void apply(cv::Mat& image, Rng& /*rng*/) const override {
    if (image.rows == height_ && image.cols == width_) return;
    cv::Mat out;
    cv::resize(image, out, cv::Size(width_, height_), 0, 0, interpolation_);
    image = out;
  }

 private:
  int height_, width_, interpolation_;
};

}  // namespace

void register_resize(Registry<TransformFactory>& registry) {
  registry.add(
      "resize",
      [](const nlohmann::json& params) {
        return std::make_shared<ResizeTransform>(
            params.at("height").get<int>(), params.at("width").get<int>(),
            interpolation_flag(params.at("interpolation").get<std::string>()));
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"height", "width"}},
       {"description",
        "cv::resize(in, Size(width, height), interpolation): the same call as albumentations' "
        "Resize, so u8 stays u8 (rounded, saturated). No random draws; an image already of that "
        "size is left as is."},
       {"properties",
        {{"height", {{"type", "integer"}, {"minimum", 1}, {"description", "Output height."}}},
         {"width", {{"type", "integer"}, {"minimum", 1}, {"description", "Output width."}}},
         {"interpolation", interpolation_schema("lanczos4")}}}},
      "Resize to height x width (default Lanczos4, as the original)");
}

}  // namespace runner::data
