// Transform `shift_scale_rotate`: albumentations' ShiftScaleRotate (one affine warp).

#include <opencv2/imgproc.hpp>

#include "runner/data/transform.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class ShiftScaleRotateTransform : public Transform {
 public:
  ShiftScaleRotateTransform(double shift, double scale, double rotate, int interpolation,
                            int border, double value, double p)
      : shift_(shift),
        scale_(scale),
        rotate_(rotate),
        interpolation_(interpolation),
        border_(border),
        value_(value),
        p_(p) {}

  void apply(cv::Mat& image, Rng& rng) const override {
    const bool on = draw_coin(rng, p_);
    const double angle = rng.uniform(-rotate_, rotate_);
    const double scale = rng.uniform(1.0 - scale_, 1.0 + scale_);
    const double dx = rng.uniform(-shift_, shift_);
    const double dy = rng.uniform(-shift_, shift_);
    if (!on) return;
    const cv::Point2f center(image.cols / 2.0f, image.rows / 2.0f);
    cv::Mat m = cv::getRotationMatrix2D(center, angle, scale);
    m.at<double>(0, 2) += dx * image.cols;
    m.at<double>(1, 2) += dy * image.rows;
    cv::Mat out;
    cv::warpAffine(image, out, m, image.size(), interpolation_, border_, cv::Scalar::all(value_));
    image = out;
  }

 private:
  double shift_, scale_, rotate_;
  int interpolation_, border_;
  double value_, p_;
};

}  // namespace

void register_shift_scale_rotate(Registry<TransformFactory>& registry) {
  registry.add(
      "shift_scale_rotate",
      [](const nlohmann::json& params) {
        return std::make_shared<ShiftScaleRotateTransform>(
            params.at("shift_limit").get<double>(), params.at("scale_limit").get<double>(),
            params.at("rotate_limit").get<double>(),
            interpolation_flag(params.at("interpolation").get<std::string>()),
            border_flag(params.at("border_mode").get<std::string>()),
            params.at("value").get<double>(), params.at("p").get<double>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "albumentations ShiftScaleRotate. Random draws, always all in this order: coin, angle = "
        "U(-rotate_limit, rotate_limit) degrees (counter-clockwise), s = U(1-scale_limit, "
        "1+scale_limit), dx = U(-shift_limit, shift_limit), dy = likewise. M = "
        "getRotationMatrix2D((W/2, H/2), angle, s) with (dx*W, dy*H) added to its translation; "
        "out = warpAffine(in, M, same size, interpolation, border_mode, value)."},
       {"properties",
        {{"shift_limit",
          {{"type", "number"},
           {"minimum", 0},
           {"default", 0.0625},
           {"description", "Largest shift as a fraction of width/height."}}},
         {"scale_limit",
          {{"type", "number"},
           {"minimum", 0},
           {"maximum", 1},
           {"default", 0.1},
           {"description", "Scale factor drawn from [1 - l, 1 + l]."}}},
         {"rotate_limit",
          {{"type", "number"},
           {"minimum", 0},
           {"default", 45},
           {"description", "Largest rotation in degrees."}}},
         {"interpolation", interpolation_schema("linear")},
         {"border_mode",
          {{"type", "string"},
           {"enum", {"constant", "replicate", "reflect", "wrap", "reflect_101"}},
           {"default", "reflect_101"},
           {"description", "How pixels outside the image are filled (cv::BORDER_<MODE>)."}}},
         {"value",
          {{"type", "number"},
           {"default", 0},
           {"description", "Fill value for border_mode constant."}}},
         {"p", p_schema(0.5)}}}},
      "Random shift, scale and rotation in one affine warp");
}

}  // namespace runner::data
