// Transform `normalize`: albumentations' Normalize, to float32.

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include "runner/data/batched_transform.hpp"
#include "runner/data/input_normalization.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

class NormalizeTransform : public Transform, public BatchedTransform, public InputNormalization {
 public:
  NormalizeTransform(std::vector<double> mean, std::vector<double> std, double max_pixel_value)
      : input_mean_(mean), input_std_(std) {
    // Of pixels scaled to 0..1, as timm's pretrained_cfg gives them (albumentations' values are
    // of pixels scaled by 1 / max_pixel_value).
    for (double& v : input_mean_) v *= max_pixel_value / 255.0;
    for (double& v : input_std_) v *= max_pixel_value / 255.0;
    // float32 arithmetic in albumentations' order: mean*max, 1/(std*max), (x - m) * d.
    for (size_t i = 0; i < mean.size(); ++i)
      mean_.push_back(static_cast<float>(mean[i]) * static_cast<float>(max_pixel_value));
    for (size_t i = 0; i < std.size(); ++i)
      inv_std_.push_back(1.0f / (static_cast<float>(std[i]) * static_cast<float>(max_pixel_value)));
  }

  void apply(cv::Mat& image, Rng& /*rng*/) const override {
    const int channels = image.channels();
    check_channels(channels);
    cv::Mat out(image.rows, image.cols, CV_32FC(channels));
    if (image.depth() == CV_8U) {
      float lut[4][256];  // exact: the same float32 expression for each of the 256 inputs
      for (int c = 0; c < channels && c < 4; ++c)
        for (int i = 0; i < 256; ++i) lut[c][i] = (static_cast<float>(i) - m(c)) * d(c);
      if (channels <= 4) {
        for (int y = 0; y < image.rows; ++y) {
          const uint8_t* src = image.ptr<uint8_t>(y);
          float* dst = out.ptr<float>(y);
          const int n = image.cols * channels;
          if (channels == 1) {
            for (int x = 0; x < n; ++x) dst[x] = lut[0][src[x]];
          } else if (channels == 3) {  // unrolled: no division per value
            for (int x = 0; x < n; x += 3) {
              dst[x] = lut[0][src[x]];
              dst[x + 1] = lut[1][src[x + 1]];
              dst[x + 2] = lut[2][src[x + 2]];
            }
          } else {
            for (int x = 0; x < n; ++x) dst[x] = lut[x % channels][src[x]];
          }
        }
        image = out;
        return;
      }
    }
    cv::Mat f;
    image.convertTo(f, CV_32F);
    for (int y = 0; y < f.rows; ++y) {
      const float* src = f.ptr<float>(y);
      float* dst = out.ptr<float>(y);
      const int n = f.cols * channels;
      for (int x = 0; x < n; ++x) dst[x] = (src[x] - m(x % channels)) * d(x % channels);
    }
    image = out;
  }

 private:
  /// The same float32 expression as apply() (and its u8 table), on every sample at once.
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& /*draws*/) const override {
    const int64_t channels = images.size(1);
    check_channels(static_cast<int>(channels));
    auto per_channel = [&](const std::vector<float>& values) {
      return at::tensor(values, at::kFloat).to(images.device()).view({1, -1, 1, 1});
    };
    return (images.to(at::kFloat) - per_channel(mean_)) * per_channel(inv_std_);
  }

  void check_channels(int channels) const {
    for (const auto* v : {&mean_, &inv_std_})
      if (v->size() != 1 && static_cast<int>(v->size()) != channels)
        throw DataError("normalize: mean/std have " + std::to_string(v->size()) +
                        " values but the image has " + std::to_string(channels) +
                        " channels; give one value or one per channel");
  }
  std::vector<double> input_mean() const override { return input_mean_; }
  std::vector<double> input_std() const override { return input_std_; }

  float m(int c) const { return mean_.size() == 1 ? mean_[0] : mean_[c]; }
  float d(int c) const { return inv_std_.size() == 1 ? inv_std_[0] : inv_std_[c]; }
  std::vector<float> mean_, inv_std_;
  std::vector<double> input_mean_, input_std_;
};

std::vector<double> values(const nlohmann::json& v, const char* key) {
  std::vector<double> out;
  if (v.is_number())
    out.push_back(v.get<double>());
  else
    out = v.get<std::vector<double>>();
  if (out.empty()) throw ConfigError(std::string("normalize: ") + key + " is empty");
  for (double x : out)
    if (std::string(key) == "std" && x == 0) throw ConfigError("normalize: std must not be 0");
  return out;
}

nlohmann::json values_schema(nlohmann::json def, const char* what) {
  return {{"type", {"number", "array"}},
          {"items", {{"type", "number"}}},
          {"minItems", 1},
          {"default", def},
          {"description", std::string(what) + ": one value for every channel or one per channel."}};
}

}  // namespace

void register_normalize(Registry<TransformFactory>& registry) {
  registry.add(
      "normalize",
      [](const nlohmann::json& params) {
        return std::make_shared<NormalizeTransform>(values(params.at("mean"), "mean"),
                                                    values(params.at("std"), "std"),
                                                    params.at("max_pixel_value").get<double>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "albumentations Normalize: out = (float32(in) - mean*max_pixel_value) * (1 / "
        "(std*max_pixel_value)), all in float32; the output is float32. No random draws. The "
        "defaults are albumentations' (ImageNet RGB, 3 channels); the original's Fashion-MNIST run "
        "uses mean 0.1310, std "
        "0.30854."},
       {"properties",
        {{"mean", values_schema({0.485, 0.456, 0.406}, "Mean (in units of max_pixel_value)")},
         {"std",
          values_schema({0.229, 0.224, 0.225}, "Standard deviation (in units of max_pixel_value)")},
         {"max_pixel_value",
          {{"type", "number"},
           {"default", 255.0},
           {"description", "Scale of mean and std (255 for u8 images)."}}}}}},
      "Normalize to float32: (x - mean*max) / (std*max)");
}

}  // namespace runner::data
