// Transform `random_brightness_contrast`: albumentations' RandomBrightnessContrast.

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class BrightnessContrastTransform : public Transform, public BatchedTransform {
 public:
  BrightnessContrastTransform(double b_lo, double b_hi, double c_lo, double c_hi, bool by_max,
                              double p)
      : b_lo_(b_lo), b_hi_(b_hi), c_lo_(c_lo), c_hi_(c_hi), by_max_(by_max), p_(p) {}

  void apply(cv::Mat& image, Rng& rng) const override {
    double drawn[3];
    draw(rng, image.rows, image.cols, drawn);
    if (drawn[0] != 0) adjust(image, drawn[1], drawn[2]);
  }

  int draws_per_sample() const override { return 3; }
  /// coin (1: apply), alpha, beta: always all three, in this order.
  void draw(Rng& rng, int64_t /*height*/, int64_t /*width*/, double* out) const override {
    out[0] = draw_coin(rng, p_) ? 1 : 0;
    out[1] = 1.0 + rng.uniform(c_lo_, c_hi_);
    out[2] = rng.uniform(b_lo_, b_hi_);
  }

  /// adjust()'s arithmetic on every sample at once: the same float32 products and sums (the
  /// u8 LUT holds exactly these values), so u8 batches equal the per-sample path bit for bit.
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    const auto device = images.device();
    const at::Tensor on = sample_mask(draws.select(1, 0), images);
    const at::Tensor alpha = draws.select(1, 1);
    const at::Tensor beta = draws.select(1, 2);
    const bool u8 = images.scalar_type() == at::kByte;
    // float64 per sample, rounded to float32 as adjust() does; beta 0 gives a shift of 0, the
    // same as adjust() adding nothing.
    at::Tensor shift;
    if (by_max_) {
      shift = beta * (u8 ? 255.0 : 1.0);
    } else {
      // cv::mean's arithmetic: each channel's sum times 1 / pixels in double, then their average.
      const double per_pixel = 1.0 / static_cast<double>(images.size(2) * images.size(3));
      const at::Tensor channel_means = images.to(at::kDouble).sum({2, 3}).cpu() * per_pixel;
      at::Tensor mean = channel_means.select(1, 0);
      for (int64_t c = 1; c < channel_means.size(1); ++c) mean = mean + channel_means.select(1, c);
      mean = mean / static_cast<double>(channel_means.size(1));
      shift = u8 ? alpha * beta * mean : beta * mean;
    }
    const at::Tensor scale32 = alpha.to(at::kFloat).to(device).view({-1, 1, 1, 1});
    const at::Tensor shift32 = shift.to(at::kFloat).to(device).view({-1, 1, 1, 1});
    at::Tensor adjusted = (images.to(at::kFloat) * scale32 + shift32).clamp(0.0, u8 ? 255.0 : 1.0);
    if (u8) adjusted = adjusted.to(at::kByte);  // truncation, as the LUT's static_cast
    return at::where(on, adjusted, u8 ? images : images.to(at::kFloat));
  }

  /// The exact arithmetic of albumentations (float32 LUT, truncation to u8).
  void adjust(cv::Mat& image, double alpha, double beta) const {
    if (image.depth() == CV_8U) {
      const double mean = by_max_ ? 0.0 : channel_mean(image);
      cv::Mat lut(1, 256, CV_8U);
      for (int i = 0; i < 256; ++i) {
        float v = static_cast<float>(i);
        if (alpha != 1) v *= static_cast<float>(alpha);
        if (beta != 0)
          v += by_max_ ? static_cast<float>(beta * 255.0) : static_cast<float>(alpha * beta * mean);
        v = std::min(std::max(v, 0.0f), 255.0f);
        lut.at<uint8_t>(i) = static_cast<uint8_t>(v);
      }
      cv::Mat out;
      cv::LUT(image, lut, out);
      image = out;
      return;
    }
    // Non-u8 images: albumentations' float path with max value 1.0.
    cv::Mat f;
    image.convertTo(f, CV_32F);
    const double add = beta == 0 ? 0.0 : (by_max_ ? beta * 1.0 : beta * channel_mean(f));
    f.convertTo(f, CV_32F, alpha, add);
    cv::min(f, 1.0, f);
    cv::max(f, 0.0, f);
    image = f;
  }

 private:
  static double channel_mean(const cv::Mat& image) {
    const cv::Scalar m = cv::mean(image);
    double sum = 0;
    for (int c = 0; c < image.channels(); ++c) sum += m[c];
    return sum / image.channels();
  }
  double b_lo_, b_hi_, c_lo_, c_hi_;
  bool by_max_;
  double p_;
};

std::pair<double, double> limit_range(const nlohmann::json& v, const char* key) {
  if (v.is_number()) return {-std::abs(v.get<double>()), std::abs(v.get<double>())};
  if (v.size() != 2) throw ConfigError(std::string(key) + " must be a number or [low, high]");
  return {v[0].get<double>(), v[1].get<double>()};
}

nlohmann::json limit_schema(const char* what) {
  return {{"type", {"number", "array"}},
          {"items", {{"type", "number"}}},
          {"minItems", 2},
          {"maxItems", 2},
          {"default", 0.2},
          {"description", std::string(what) + " limit: l means [-l, l]; or [low, high]."}};
}

}  // namespace

void register_random_brightness_contrast(Registry<TransformFactory>& registry) {
  registry.add(
      "random_brightness_contrast",
      [](const nlohmann::json& params) {
        const auto b = limit_range(params.at("brightness_limit"), "brightness_limit");
        const auto c = limit_range(params.at("contrast_limit"), "contrast_limit");
        return std::make_shared<BrightnessContrastTransform>(
            b.first, b.second, c.first, c.second, params.at("brightness_by_max").get<bool>(),
            params.at("p").get<double>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "albumentations RandomBrightnessContrast. Random draws, always all three in this order: "
        "coin, alpha = 1 + U(c_low, c_high), beta = U(b_low, b_high). u8 images: out = "
        "uint8(clip(float32(in) * alpha + beta * 255, 0, 255)) (truncating, via a LUT, exactly as "
        "albumentations); with brightness_by_max false, beta * 255 becomes alpha * beta * "
        "mean(image). Other depths: albumentations' float path, clip(in * alpha + beta * 1.0, 0, "
        "1). Difference from the original script: it fed float32 images in 0..255, which this "
        "float path clips to [0, 1] (blank images); runner keeps images u8 until normalize, so "
        "the transform does what it says."},
       {"properties",
        {{"brightness_limit", limit_schema("Brightness")},
         {"contrast_limit", limit_schema("Contrast")},
         {"brightness_by_max",
          {{"type", "boolean"},
           {"default", true},
           {"description",
            "true: brightness shift beta * max value (255 for u8); false: "
            "alpha * beta * mean of the image."}}},
         {"p", schemas::transform_p(0.5)}}}},
      "Random brightness and contrast (albumentations' formula)");
}

}  // namespace runner::data
