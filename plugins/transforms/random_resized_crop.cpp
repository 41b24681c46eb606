// Transform `random_resized_crop`: torchvision/albumentations RandomResizedCrop.

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <opencv2/imgproc.hpp>

#include "resize_matrix.hpp"
#include "runner/data/batched_transform.hpp"
#include "runner/data/scaled_source.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class RandomResizedCropTransform : public Transform,
                                   public BatchedTransform,
                                   public ScaledSourceTransform {
 public:
  RandomResizedCropTransform(int height, int width, double s_lo, double s_hi, double r_lo,
                             double r_hi, int interpolation, double p)
      : height_(height),
        width_(width),
        s_lo_(s_lo),
        s_hi_(s_hi),
        r_lo_(r_lo),
        r_hi_(r_hi),
        interpolation_(interpolation),
        p_(p) {}

  void apply(cv::Mat& image, Rng& rng) const override {
    double drawn[5];
    draw(rng, image.rows, image.cols, drawn);
    if (drawn[0] == 0) return;
    const cv::Rect box(static_cast<int>(drawn[1]), static_cast<int>(drawn[2]),
                       static_cast<int>(drawn[3]), static_cast<int>(drawn[4]));
    cv::Mat out;
    cv::resize(image(box), out, cv::Size(width_, height_), 0, 0, interpolation_);
    image = out;
  }

  // The box drawn on the full source decides: it must keep a source pixel per output pixel.
  int source_reduction(Rng rng, int rows, int cols) const override {
    double drawn[5];
    draw(rng, rows, cols, drawn);
    return drawn[0] == 0 ? 1 : largest_source_reduction(drawn[3], drawn[4], width_, height_);
  }
  // The full source's box, scaled to the smaller decode (to the nearest pixel: at most half a
  // decoded pixel off, a fraction of an output pixel), then resized as apply() does.
  void apply_reduced(cv::Mat& image, Rng& rng, int rows, int cols, int reduction) const override {
    double drawn[5];
    draw(rng, rows, cols, drawn);
    if (drawn[0] == 0) return;
    const auto scaled = [&](double v) { return static_cast<int>(std::lround(v / reduction)); };
    const int x = std::min(scaled(drawn[1]), image.cols - 1),
              y = std::min(scaled(drawn[2]), image.rows - 1);
    const cv::Rect box(x, y, std::max(1, std::min(scaled(drawn[3]), image.cols - x)),
                       std::max(1, std::min(scaled(drawn[4]), image.rows - y)));
    cv::Mat out;
    cv::resize(image(box), out, cv::Size(width_, height_), 0, 0, interpolation_);
    image = out;
  }

  int draws_per_sample() const override { return 5; }
  /// coin (1: crop), then the box x, y, width, height.
  void draw(Rng& rng, int64_t height, int64_t width, double* out) const override {
    out[0] = draw_coin(rng, p_) ? 1 : 0;
    const cv::Rect box = choose_box(static_cast<int>(height), static_cast<int>(width), rng);
    out[1] = box.x;
    out[2] = box.y;
    out[3] = box.width;
    out[4] = box.height;
  }

  /// Each sample's box resized by its own pair of resize matrices (cv::resize of unit impulses,
  /// placed at the box): the per-sample cv::resize(image(box)) to float rounding, u8 within one
  /// level, with the configured interpolation.
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    const int64_t batch = images.size(0), rows = images.size(2), cols = images.size(3);
    at::Tensor row_maps = at::zeros({batch, height_, rows}, at::kFloat);
    at::Tensor column_maps = at::zeros({batch, cols, width_}, at::kFloat);
    const auto drawn = draws.accessor<double, 2>();
    for (int64_t b = 0; b < batch; ++b) {
      if (drawn[b][0] == 0) {
        // The per-sample path leaves the image as it is; collate would refuse two sizes.
        if (rows != height_ || cols != width_)
          throw DataError("random_resized_crop with p < 1 leaves some " + std::to_string(rows) +
                          "x" + std::to_string(cols) + " images uncropped beside " +
                          std::to_string(height_) + "x" + std::to_string(width_) +
                          " crops, and a batch has one size: set p: 1 or resize after it");
        row_maps[b] = at::eye(rows, at::kFloat);
        column_maps[b] = at::eye(cols, at::kFloat);
        continue;
      }
      const auto x = static_cast<int64_t>(drawn[b][1]), y = static_cast<int64_t>(drawn[b][2]);
      const auto w = static_cast<int>(drawn[b][3]), h = static_cast<int>(drawn[b][4]);
      row_maps[b].narrow(1, y, h).copy_(resize_matrix(0, h, w, height_, width_, interpolation_));
      column_maps[b].narrow(0, x, w).copy_(
          resize_matrix(1, h, w, height_, width_, interpolation_).t());
    }
    const auto device = images.device();
    const at::Tensor rows_applied =
        at::matmul(row_maps.to(device).unsqueeze(1), images.to(at::kFloat));
    return as_input_type(at::matmul(rows_applied, column_maps.to(device).unsqueeze(1)), images);
  }

 private:
  /// torchvision's get_params: the first of 10 (area, log-uniform ratio) tries that fits, else
  /// a centre crop. All 10 tries are always drawn, so the stream advances by a fixed count.
  cv::Rect choose_box(int rows, int cols, Rng& rng) const {
    const double area = static_cast<double>(rows) * cols;
    cv::Rect chosen;
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double target = area * rng.uniform(s_lo_, s_hi_);
      const double ratio = std::exp(rng.uniform(std::log(r_lo_), std::log(r_hi_)));
      const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
      const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
      const int y = static_cast<int>(rng.uniform_int(0, std::max(rows - h, 0)));
      const int x = static_cast<int>(rng.uniform_int(0, std::max(cols - w, 0)));
      if (chosen.area() == 0 && w > 0 && h > 0 && w <= cols && h <= rows) chosen = {x, y, w, h};
    }
    if (chosen.area() > 0) return chosen;
    const double in_ratio = static_cast<double>(cols) / rows;
    int w = cols, h = rows;
    if (in_ratio < r_lo_)
      h = static_cast<int>(std::lround(w / r_lo_));
    else if (in_ratio > r_hi_)
      w = static_cast<int>(std::lround(h * r_hi_));
    h = std::max(1, std::min(h, rows));
    w = std::max(1, std::min(w, cols));
    return {(cols - w) / 2, (rows - h) / 2, w, h};
  }
  int height_, width_;
  double s_lo_, s_hi_, r_lo_, r_hi_;
  int interpolation_;
  double p_;
};

nlohmann::json pair_schema(double lo, double hi, const char* description) {
  return {{"type", "array"},     {"items", {{"type", "number"}, {"exclusiveMinimum", 0}}},
          {"minItems", 2},       {"maxItems", 2},
          {"default", {lo, hi}}, {"description", description}};
}

}  // namespace

void register_random_resized_crop(Registry<TransformFactory>& registry) {
  registry.add(
      "random_resized_crop",
      [](const nlohmann::json& params) {
        const auto s = params.at("scale").get<std::vector<double>>();
        const auto r = params.at("ratio").get<std::vector<double>>();
        return std::make_shared<RandomResizedCropTransform>(
            params.at("height").get<int>(), params.at("width").get<int>(), s[0], s[1], r[0], r[1],
            interpolation_flag(params.at("interpolation").get<std::string>()),
            params.at("p").get<double>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"height", "width"}},
       {"description",
        "torchvision/albumentations RandomResizedCrop. Random draws: coin, then always 10 tries "
        "of (a = H*W*U(scale), r = exp(U(log ratio)), w = round(sqrt(a*r)), h = round(sqrt(a/r)), "
        "y = int U[0, H-h], x = int U[0, W-w]); the first box that fits wins; else the largest "
        "centre box "
        "with a ratio inside `ratio`. The box is resized to height x width. When the coin "
        "fails the image is left unchanged, as in albumentations (keep p = 1 unless a later "
        "resize makes sizes equal)."},
       {"properties",
        {{"height", {{"type", "integer"}, {"minimum", 1}, {"description", "Output height."}}},
         {"width", {{"type", "integer"}, {"minimum", 1}, {"description", "Output width."}}},
         {"scale", pair_schema(0.08, 1.0, "Range of the crop's share of the image area.")},
         {"ratio", pair_schema(0.75, 4.0 / 3.0, "Range of the crop's width/height ratio.")},
         {"interpolation", interpolation_schema("linear")},
         {"p", schemas::transform_p(1.0)}}}},
      "Random crop of random area and aspect, resized to height x width");
}

}  // namespace runner::data
