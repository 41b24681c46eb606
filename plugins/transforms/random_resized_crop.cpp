// Transform `random_resized_crop`: torchvision/albumentations RandomResizedCrop.

#include <cmath>

#include <opencv2/imgproc.hpp>

#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class RandomResizedCropTransform : public Transform {
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
    const bool on = draw_coin(rng, p_);
    const cv::Rect box = choose_box(image.rows, image.cols, rng);
    if (!on) return;
    cv::Mat out;
    cv::resize(image(box), out, cv::Size(width_, height_), 0, 0, interpolation_);
    image = out;
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
         {"p", p_schema(1.0)}}}},
      "Random crop of random area and aspect, resized to height x width");
}

}  // namespace runner::data
