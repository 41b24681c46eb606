// Transform `to_tensor`: the element type change of albumentations' ToTensorV2.

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class ToTensorTransform : public Transform, public BatchedTransform {
 public:
  void apply(cv::Mat& image, Rng& /*rng*/) const override {
    if (image.depth() == CV_32F) return;
    cv::Mat out;
    image.convertTo(out, CV_32F);
    image = out;
  }
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& /*draws*/) const override {
    return images.to(at::kFloat);
  }
};

}  // namespace

void register_to_tensor(Registry<TransformFactory>& registry) {
  registry.add(
      "to_tensor", [](const nlohmann::json&) { return std::make_shared<ToTensorTransform>(); },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "out = float32(in), no scaling (u8 255 stays 255.0), like ToTensorV2. The HWC -> CHW "
        "layout change happens when batches are collated, so this is optional: collation "
        "converts to float32 the same way. No random draws."},
       {"properties", nlohmann::json::object()}},
      "Convert to float32 without scaling (like ToTensorV2)");
}

}  // namespace runner::data
