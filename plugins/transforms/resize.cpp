// Transform `resize`: cv::resize to a fixed size.

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include "resize_matrix.hpp"
#include "runner/data/batched_transform.hpp"
#include "runner/data/scaled_source.hpp"
#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class ResizeTransform : public Transform, public BatchedTransform, public ScaledSourceTransform {
 public:
  ResizeTransform(int height, int width, int interpolation)
      : height_(height), width_(width), interpolation_(interpolation) {}
  void apply(cv::Mat& image, Rng& /*rng*/) const override {
    if (image.rows == height_ && image.cols == width_) return;
    cv::Mat out;
    cv::resize(image, out, cv::Size(width_, height_), 0, 0, interpolation_);
    image = out;
  }

  int source_reduction(Rng /*rng*/, int rows, int cols) const override {
    return largest_source_reduction(cols, rows, width_, height_);
  }
  void apply_reduced(cv::Mat& image, Rng& rng, int /*rows*/, int /*cols*/,
                     int /*reduction*/) const override {
    apply(image, rng);  // the whole image either way
  }

  /// rows x images x columns^T: two batched matmuls. u8 batches round and saturate back to u8,
  /// as cv::resize does; OpenCV computes u8 resizes in 11-bit fixed point, so they may differ
  /// from this float product by one level.
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& /*draws*/) const override {
    const int in_height = static_cast<int>(images.size(2));
    const int in_width = static_cast<int>(images.size(3));
    if (in_height == height_ && in_width == width_) return images;
    const auto [rows, columns] = matrices(in_height, in_width, images.device());
    return as_input_type(at::matmul(at::matmul(rows, images.to(at::kFloat)), columns), images);
  }

 private:
  /// The row matrix [height, in_height] and the transposed column matrix [in_width, width] on
  /// `device`, made once per input size and device.
  std::pair<at::Tensor, at::Tensor> matrices(int in_height, int in_width,
                                             const at::Device& device) const {
    const std::string key =
        std::to_string(in_height) + "x" + std::to_string(in_width) + "@" + device.str();
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = cache_.find(key);
    if (found == cache_.end()) {
      at::Tensor rows =
          resize_matrix(0, in_height, in_width, height_, width_, interpolation_).to(device);
      at::Tensor columns = resize_matrix(1, in_height, in_width, height_, width_, interpolation_)
                               .t()
                               .contiguous()
                               .to(device);
      found = cache_.emplace(key, std::make_pair(rows, columns)).first;
    }
    return found->second;
  }

  int height_, width_, interpolation_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::pair<at::Tensor, at::Tensor>> cache_;
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
