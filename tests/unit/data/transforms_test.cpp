// Transforms against hand-computed values on tiny images.

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "data/data_test_util.hpp"
#include "runner/data/input_normalization.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

using testing::make_transform;

cv::Mat u8(int rows, int cols, std::vector<int> values) {
  cv::Mat m(rows, cols, CV_8UC1);
  for (int i = 0; i < rows * cols; ++i)
    m.at<uint8_t>(i / cols, i % cols) = static_cast<uint8_t>(values[i]);
  return m;
}

std::vector<int> values_of(const cv::Mat& m) {
  cv::Mat i32;
  m.convertTo(i32, CV_32S);
  return std::vector<int>(i32.begin<int>(), i32.end<int>());
}

cv::Mat apply(const std::string& name, const nlohmann::json& params, cv::Mat image,
              uint64_t index = 0) {
  Rng rng(1, 0, index);
  make_transform(name, params)->apply(image, rng);
  return image;
}

TEST(Transforms, FlipsMirrorTheRightAxis) {
  const cv::Mat in = u8(2, 3, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values_of(apply("horizontal_flip", {{"p", 1.0}}, in.clone())),
            (std::vector<int>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(values_of(apply("vertical_flip", {{"p", 1.0}}, in.clone())),
            (std::vector<int>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(values_of(apply("horizontal_flip", {{"p", 0.0}}, in.clone())), values_of(in));
  // p = 0.5 (default): some samples flipped, some not.
  std::set<std::vector<int>> seen;
  for (uint64_t i = 0; i < 32; ++i)
    seen.insert(values_of(apply("horizontal_flip", {}, in.clone(), i)));
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Transforms, BrightnessContrastFollowsAlbumentationsOnU8) {
  // Fixed ranges: alpha = 1 + 0.5, beta = 0.1 -> out = trunc(clip(1.5 * in + 25.5, 0, 255)).
  const nlohmann::json p = {
      {"p", 1.0}, {"brightness_limit", {0.1, 0.1}}, {"contrast_limit", {0.5, 0.5}}};
  EXPECT_EQ(values_of(apply("random_brightness_contrast", p, u8(1, 4, {0, 100, 153, 200}))),
            (std::vector<int>{25, 175, 255, 255}));
  // Darker: alpha 0.8, beta -0.2 -> 0.8 * in - 51, clipped at 0.
  const nlohmann::json q = {
      {"p", 1.0}, {"brightness_limit", {-0.2, -0.2}}, {"contrast_limit", {-0.2, -0.2}}};
  EXPECT_EQ(values_of(apply("random_brightness_contrast", q, u8(1, 4, {0, 60, 64, 255}))),
            (std::vector<int>{0, 0, 0, 153}));
  // Default limits: every output within [0.8 x - 51, 1.2 x + 51].
  for (uint64_t i = 0; i < 50; ++i) {
    const auto out =
        values_of(apply("random_brightness_contrast", {{"p", 1.0}}, u8(1, 2, {100, 200}), i));
    EXPECT_GE(out[0], 80 - 51);
    EXPECT_LE(out[0], 120 + 51);
    EXPECT_GE(out[1], 160 - 51);
  }
}

TEST(Transforms, BrightnessContrastOnFloatClipsToOneLikeTheOriginalsTrap) {
  // albumentations' float path (max value 1.0): a float image in 0..255 is clipped to [0, 1].
  cv::Mat f(1, 2, CV_32F);
  f.at<float>(0) = 0.5f;
  f.at<float>(1) = 200.0f;
  const nlohmann::json p = {
      {"p", 1.0}, {"brightness_limit", {0.1, 0.1}}, {"contrast_limit", {0.0, 0.0}}};
  const cv::Mat out = apply("random_brightness_contrast", p, f);
  EXPECT_FLOAT_EQ(out.at<float>(0), 0.6f);
  EXPECT_FLOAT_EQ(out.at<float>(1), 1.0f);
}

TEST(Transforms, RandomTransformsDrawTheSameNumbersWhateverP) {
  for (const std::string name : {"horizontal_flip", "vertical_flip", "random_brightness_contrast",
                                 "shift_scale_rotate", "random_rotate90", "random_resized_crop"}) {
    uint64_t after[2];
    for (int k = 0; k < 2; ++k) {
      Rng rng(3, 1, 4);
      cv::Mat image = u8(4, 4, std::vector<int>(16, 9));
      nlohmann::json params = {{"p", k == 0 ? 0.0 : 1.0}};
      if (name == "random_resized_crop") params.update({{"height", 2}, {"width", 2}});
      make_transform(name, params)->apply(image, rng);
      after[k] = rng.next_u64();
    }
    EXPECT_EQ(after[0], after[1]) << name;
  }
}

TEST(Transforms, ResizeUsesTheNamedInterpolation) {
  const cv::Mat in = u8(2, 2, {10, 20, 30, 40});
  EXPECT_EQ(values_of(apply("resize", {{"height", 4}, {"width", 4}, {"interpolation", "nearest"}},
                            in.clone())),
            (std::vector<int>{10, 10, 20, 20, 10, 10, 20, 20, 30, 30, 40, 40, 30, 30, 40, 40}));
  // Lanczos4 (default) 28 -> 56 keeps u8 and keeps a constant image constant.
  const cv::Mat out =
      apply("resize", {{"height", 56}, {"width", 56}}, cv::Mat(28, 28, CV_8UC1, cv::Scalar(77)));
  EXPECT_EQ(out.type(), CV_8UC1);
  EXPECT_EQ(out.size(), cv::Size(56, 56));
  EXPECT_EQ(cv::countNonZero(out != 77), 0);
  EXPECT_THROW(make_transform("resize", {{"height", 2}, {"width", 2}, {"interpolation", "bogus"}}),
               ConfigError);
}

TEST(Transforms, NormalizeIsAlbumentationsFormulaInFloat32) {
  // (x - 0.5 * 255) / (0.25 * 255): 255 -> 2, 0 -> -2, 51 -> -1.2.
  const cv::Mat out = apply("normalize", {{"mean", 0.5}, {"std", 0.25}}, u8(1, 3, {255, 0, 51}));
  ASSERT_EQ(out.type(), CV_32FC1);
  EXPECT_FLOAT_EQ(out.at<float>(0), 2.0f);
  EXPECT_FLOAT_EQ(out.at<float>(1), -2.0f);
  EXPECT_NEAR(out.at<float>(2), -1.2f, 1e-6);
  // The original's Fashion-MNIST statistics: 0 -> -0.1310 / 0.30854.
  const cv::Mat fm = apply("normalize", {{"mean", 0.1310}, {"std", 0.30854}}, u8(1, 1, {0}));
  EXPECT_NEAR(fm.at<float>(0), -0.1310 / 0.30854, 1e-6);
  // Float input gives the same as u8 input of the same values.
  cv::Mat f(1, 3, CV_32F);
  u8(1, 3, {255, 0, 51}).convertTo(f, CV_32F);
  const cv::Mat out_f = apply("normalize", {{"mean", 0.5}, {"std", 0.25}}, f);
  EXPECT_EQ(cv::countNonZero(out_f != out), 0);
  // Per channel.
  cv::Mat rgb(1, 1, CV_8UC3, cv::Scalar(255, 255, 255));
  const cv::Mat c = apply("normalize", {{"mean", {0.0, 0.5, 1.0}}, {"std", {1.0, 1.0, 0.5}}}, rgb);
  EXPECT_FLOAT_EQ(c.at<cv::Vec3f>(0)[0], 1.0f);
  EXPECT_FLOAT_EQ(c.at<cv::Vec3f>(0)[1], 0.5f);
  EXPECT_FLOAT_EQ(c.at<cv::Vec3f>(0)[2], 0.0f);
  EXPECT_THROW(apply("normalize", {{"mean", {0.1, 0.2, 0.3}}, {"std", 0.5}}, u8(1, 1, {0})),
               DataError);
}

// What `runner export` writes as the model's mean and std: of pixels scaled to 0..1 (timm's
// pretrained_cfg), whatever max_pixel_value albumentations' values are given in.
TEST(Transforms, NormalizeSaysItsMeanAndStdInTimmsUnits) {
  const auto timm_units = make_transform("normalize", {{"mean", {0.485, 0.456, 0.406}},
                                                       {"std", {0.229, 0.224, 0.225}},
                                                       {"max_pixel_value", 255.0}});
  const auto* said = dynamic_cast<const runner::data::InputNormalization*>(timm_units.get());
  ASSERT_NE(said, nullptr);
  EXPECT_EQ(said->input_mean(), (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(said->input_std(), (std::vector<double>{0.229, 0.224, 0.225}));
  // Given in pixel values (max_pixel_value 1): 33.4 / 255 = 0.131.
  const auto pixels =
      make_transform("normalize", {{"mean", 33.405}, {"std", 78.6777}, {"max_pixel_value", 1.0}});
  said = dynamic_cast<const runner::data::InputNormalization*>(pixels.get());
  ASSERT_NE(said, nullptr);
  EXPECT_NEAR(said->input_mean().at(0), 0.1310, 1e-9);
  EXPECT_NEAR(said->input_std().at(0), 0.30854, 1e-9);
  EXPECT_EQ(dynamic_cast<const runner::data::InputNormalization*>(
                make_transform("horizontal_flip", {{"p", 1.0}}).get()),
            nullptr);
}

TEST(Transforms, RandomRotate90TurnsCounterClockwise) {
  const cv::Mat in = u8(2, 3, {1, 2, 3, 4, 5, 6});
  std::set<std::vector<int>> seen;
  for (uint64_t i = 0; i < 40; ++i) {
    const cv::Mat out = apply("random_rotate90", {{"p", 1.0}}, in.clone(), i);
    const auto v = values_of(out);
    if (out.rows == 3) {
      // np.rot90 k=1: [[3,6],[2,5],[1,4]]; k=3: [[4,1],[5,2],[6,3]].
      EXPECT_TRUE(v == (std::vector<int>{3, 6, 2, 5, 1, 4}) ||
                  v == (std::vector<int>{4, 1, 5, 2, 6, 3}));
    } else {
      EXPECT_TRUE(v == values_of(in) || v == (std::vector<int>{6, 5, 4, 3, 2, 1}));
    }
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(Transforms, ShiftScaleRotateWithZeroLimitsIsIdentity) {
  cv::Mat in(5, 5, CV_8UC1);
  for (int i = 0; i < 25; ++i) in.at<uint8_t>(i / 5, i % 5) = static_cast<uint8_t>(i * 10);
  const nlohmann::json zero = {
      {"p", 1.0}, {"shift_limit", 0}, {"scale_limit", 0}, {"rotate_limit", 0}};
  EXPECT_EQ(values_of(apply("shift_scale_rotate", zero, in.clone())), values_of(in));
  // A constant image stays constant under any warp with replicated borders.
  const cv::Mat flat = apply("shift_scale_rotate", {{"p", 1.0}, {"border_mode", "replicate"}},
                             cv::Mat(9, 9, CV_8UC1, cv::Scalar(42)), 3);
  EXPECT_EQ(flat.size(), cv::Size(9, 9));
  EXPECT_EQ(cv::countNonZero(flat != 42), 0);
}

TEST(Transforms, RandomResizedCropTakesASubBlockOfTheAskedArea) {
  cv::Mat in(4, 4, CV_8UC1);
  for (int i = 0; i < 16; ++i) in.at<uint8_t>(i / 4, i % 4) = static_cast<uint8_t>(i);
  // Full area, square: the whole image.
  const nlohmann::json full = {
      {"height", 4}, {"width", 4}, {"scale", {1.0, 1.0}}, {"ratio", {1.0, 1.0}}};
  EXPECT_EQ(values_of(apply("random_resized_crop", full, in.clone())), values_of(in));
  // A quarter of the area, square, resized to 2x2 with nearest: one 2x2 block of the input.
  const nlohmann::json quarter = {{"height", 2},
                                  {"width", 2},
                                  {"scale", {0.25, 0.25}},
                                  {"ratio", {1.0, 1.0}},
                                  {"interpolation", "nearest"}};
  for (uint64_t i = 0; i < 10; ++i) {
    const auto v = values_of(apply("random_resized_crop", quarter, in.clone(), i));
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[1], v[0] + 1);
    EXPECT_EQ(v[2], v[0] + 4);
    EXPECT_EQ(v[3], v[0] + 5);
  }
}

TEST(Transforms, ToTensorConvertsWithoutScaling) {
  const cv::Mat out = apply("to_tensor", {}, u8(1, 2, {255, 3}));
  ASSERT_EQ(out.type(), CV_32FC1);
  EXPECT_EQ(out.at<float>(0), 255.0f);
  EXPECT_EQ(out.at<float>(1), 3.0f);
}

TEST(Transforms, SchemasDocumentEveryProperty) {
  for (const auto& name :
       {"horizontal_flip", "vertical_flip", "random_brightness_contrast", "resize", "normalize",
        "random_resized_crop", "shift_scale_rotate", "random_rotate90", "to_tensor"}) {
    const auto& schema = registries().transforms.at(name).schema;
    EXPECT_EQ(schema.at("additionalProperties"), false) << name;
    EXPECT_TRUE(schema.contains("description")) << name;
    const auto required = schema.value("required", nlohmann::json::array());
    for (const auto& [key, prop] : schema.at("properties").items()) {
      EXPECT_TRUE(prop.contains("description")) << name << "." << key;
      const bool is_required = std::find(required.begin(), required.end(), key) != required.end();
      EXPECT_TRUE(is_required || prop.contains("default")) << name << "." << key;
    }
  }
}

// ---- Effects of the remaining keys (tests/key_effects.tsv) ----

/// dx and dy (fractions of width and height) that shift_scale_rotate draws in `apply` for sample
/// `index`: the plugin always draws coin, angle, scale, dx, dy, in this order.
std::pair<double, double> drawn_shift(uint64_t index, double shift_limit) {
  Rng rng(1, 0, index);
  rng.uniform();  // coin
  rng.uniform();  // angle
  rng.uniform();  // scale
  const double dx = rng.uniform(-shift_limit, shift_limit);
  const double dy = rng.uniform(-shift_limit, shift_limit);
  return {dx, dy};
}

/// shift_scale_rotate that only shifts (by up to 3 pixels of a 10 x 10 image).
nlohmann::json shift_only(double p) {
  return {{"p", p}, {"shift_limit", 0.3}, {"scale_limit", 0}, {"rotate_limit", 0}};
}

/// 10 x 10, every row 0, 20, 40, ..., 180.
cv::Mat ramp10() {
  cv::Mat m(10, 10, CV_8UC1);
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x) m.at<uint8_t>(y, x) = static_cast<uint8_t>(20 * x);
  return m;
}

TEST(Transforms, BrightnessByMaxChoosesMaxOrMeanAsTheShiftScale) {
  // A dark image (mean 15) and beta fixed at 0.2: by_max true adds 0.2 * 255 = 51, false adds
  // alpha * 0.2 * mean(image) (alpha * 3).
  const cv::Mat dark = u8(1, 4, {0, 10, 20, 30});
  auto params = [](bool by_max, double contrast) {
    return nlohmann::json{{"p", 1.0},
                          {"brightness_limit", {0.2, 0.2}},
                          {"contrast_limit", {contrast, contrast}},
                          {"brightness_by_max", by_max}};
  };
  // alpha 1: x + 51 vs x + 3.
  EXPECT_EQ(values_of(apply("random_brightness_contrast", params(true, 0.0), dark.clone())),
            (std::vector<int>{51, 61, 71, 81}));
  EXPECT_EQ(values_of(apply("random_brightness_contrast", params(false, 0.0), dark.clone())),
            (std::vector<int>{3, 13, 23, 33}));
  // alpha 1.5: 1.5 x + 51 vs trunc(1.5 x + 1.5 * 0.2 * 15) = trunc(1.5 x + 4.5).
  EXPECT_EQ(values_of(apply("random_brightness_contrast", params(true, 0.5), dark.clone())),
            (std::vector<int>{51, 66, 81, 96}));
  EXPECT_EQ(values_of(apply("random_brightness_contrast", params(false, 0.5), dark.clone())),
            (std::vector<int>{4, 19, 34, 49}));
}

TEST(Transforms, NormalizeMaxPixelValueScalesMeanAndStd) {
  // max_pixel_value 1: (x - 0.5) / 0.25; 255: (x - 127.5) / 63.75.
  nlohmann::json one = {{"mean", 0.5}, {"std", 0.25}, {"max_pixel_value", 1.0}};
  nlohmann::json full = {{"mean", 0.5}, {"std", 0.25}, {"max_pixel_value", 255.0}};
  const cv::Mat a = apply("normalize", one, u8(1, 3, {0, 1, 2}));
  ASSERT_EQ(a.type(), CV_32FC1);
  EXPECT_FLOAT_EQ(a.at<float>(0), -2.0f);
  EXPECT_FLOAT_EQ(a.at<float>(1), 2.0f);
  EXPECT_FLOAT_EQ(a.at<float>(2), 6.0f);
  const cv::Mat b = apply("normalize", full, u8(1, 3, {0, 1, 2}));
  EXPECT_FLOAT_EQ(b.at<float>(0), -2.0f);
  EXPECT_NEAR(b.at<float>(1), (1 - 127.5) / 63.75, 1e-6);
  EXPECT_NEAR(b.at<float>(2), (2 - 127.5) / 63.75, 1e-6);
  // A float image already in [0, 1] wants max_pixel_value 1: 0.75 -> (0.75 - 0.5) / 0.25 = 1.
  EXPECT_FLOAT_EQ(apply("normalize", one, cv::Mat(1, 1, CV_32F, cv::Scalar(0.75))).at<float>(0),
                  1.0f);
  EXPECT_NEAR(apply("normalize", full, cv::Mat(1, 1, CV_32F, cv::Scalar(0.75))).at<float>(0),
              (0.75 - 127.5) / 63.75, 1e-6);
}

TEST(Transforms, RandomResizedCropWithPZeroLeavesTheImageUnchanged) {
  cv::Mat in(4, 4, CV_8UC1);
  for (int i = 0; i < 16; ++i) in.at<uint8_t>(i / 4, i % 4) = static_cast<uint8_t>(10 * i);
  nlohmann::json off = {{"height", 2},
                        {"width", 2},
                        {"scale", {0.25, 0.25}},
                        {"ratio", {1.0, 1.0}},
                        {"interpolation", "nearest"},
                        {"p", 0.0}};
  nlohmann::json on = off;
  on["p"] = 1.0;
  for (uint64_t i = 0; i < 20; ++i) {
    // p 0: neither cropped nor resized (albumentations leaves the image as it is).
    const cv::Mat kept = apply("random_resized_crop", off, in.clone(), i);
    EXPECT_EQ(kept.size(), cv::Size(4, 4)) << i;
    EXPECT_EQ(values_of(kept), values_of(in)) << i;
    // p 1: a 2 x 2 block of the input.
    const cv::Mat cropped = apply("random_resized_crop", on, in.clone(), i);
    EXPECT_EQ(cropped.size(), cv::Size(2, 2)) << i;
    const auto v = values_of(cropped);
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[1], v[0] + 10) << i;
    EXPECT_EQ(v[2], v[0] + 40) << i;
  }
}

TEST(Transforms, ShiftScaleRotateFillsUncoveredPixelsPerBorderModeAndValue) {
  const cv::Mat flat(10, 10, CV_8UC1, cv::Scalar(10));
  auto params = [](const std::string& mode, double value) {
    nlohmann::json j = shift_only(1.0);
    j["interpolation"] = "nearest";
    j["border_mode"] = mode;
    j["value"] = value;
    return j;
  };
  int shifted = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    const cv::Mat constant = apply("shift_scale_rotate", params("constant", 77), flat.clone(), i);
    const cv::Mat zero = apply("shift_scale_rotate", params("constant", 0), flat.clone(), i);
    const cv::Mat reflected =
        apply("shift_scale_rotate", params("reflect_101", 77), flat.clone(), i);
    const int filled = cv::countNonZero(constant == 77);
    // constant: image pixels (10) and the fill value (77), nothing else.
    EXPECT_EQ(filled + cv::countNonZero(constant == 10), 100) << i;
    // value 0: the same uncovered pixels, filled with 0 instead.
    EXPECT_EQ(cv::countNonZero(zero == 0), filled) << i;
    // reflect_101 fills from the (flat) image itself: value is not used.
    EXPECT_EQ(cv::countNonZero(reflected != 10), 0) << i;
    const std::pair<double, double> d = drawn_shift(i, 0.3);
    if (std::abs(d.first * 10) >= 1.0 || std::abs(d.second * 10) >= 1.0) {
      ++shifted;
      EXPECT_GT(filled, 0) << i << ": a shift of a pixel or more uncovers a border";
    }
  }
  EXPECT_GT(shifted, 0);
}

TEST(Transforms, ShiftScaleRotateInterpolationNearestKeepsPixelValuesLinearBlends) {
  const cv::Mat ramp = ramp10();
  int fractional = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    nlohmann::json params = shift_only(1.0);
    params["border_mode"] = "replicate";
    params["interpolation"] = "nearest";
    const auto nearest = values_of(apply("shift_scale_rotate", params, ramp.clone(), i));
    params["interpolation"] = "linear";
    const auto linear = values_of(apply("shift_scale_rotate", params, ramp.clone(), i));
    for (int v : nearest) EXPECT_EQ(v % 20, 0) << i << ": nearest copies input pixels";
    // A horizontal shift half-way between two columns: linear blends neighbouring values.
    const double shift = drawn_shift(i, 0.3).first * 10;
    const double frac = shift - std::floor(shift);
    if (frac > 0.25 && frac < 0.75) {
      ++fractional;
      EXPECT_TRUE(std::any_of(linear.begin(), linear.end(), [](int v) { return v % 20 != 0; }))
          << i;
      EXPECT_NE(linear, nearest) << i;
    }
  }
  EXPECT_GT(fractional, 0);
}

TEST(Transforms, ShiftScaleRotatePZeroIsTheIdentity) {
  const cv::Mat ramp = ramp10();
  nlohmann::json off = shift_only(0.0);
  off["border_mode"] = "replicate";
  nlohmann::json on = shift_only(1.0);
  on["border_mode"] = "replicate";
  int moved = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(values_of(apply("shift_scale_rotate", off, ramp.clone(), i)), values_of(ramp)) << i;
    const auto out = values_of(apply("shift_scale_rotate", on, ramp.clone(), i));
    if (std::abs(drawn_shift(i, 0.3).first * 10) >= 0.5) {
      ++moved;
      EXPECT_NE(out, values_of(ramp)) << i << ": p 1 shifts the ramp";
    }
  }
  EXPECT_GT(moved, 0);
}

TEST(Transforms, RandomRotate90PGatesTheTurn) {
  const cv::Mat in = u8(2, 3, {1, 2, 3, 4, 5, 6});
  int turned = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    const cv::Mat kept = apply("random_rotate90", {{"p", 0.0}}, in.clone(), i);
    EXPECT_EQ(kept.size(), in.size()) << i;
    EXPECT_EQ(values_of(kept), values_of(in)) << i;
    // k as the plugin draws it (after the coin): with p 1 the image turns exactly when k != 0.
    Rng rng(1, 0, i);
    rng.uniform();
    const int64_t k = rng.uniform_int(0, 3);
    const cv::Mat out = apply("random_rotate90", {{"p", 1.0}}, in.clone(), i);
    const bool unchanged = out.size() == in.size() && values_of(out) == values_of(in);
    EXPECT_EQ(unchanged, k == 0) << i;
    if (!unchanged) ++turned;
  }
  EXPECT_GT(turned, 0);
}

}  // namespace
}  // namespace runner::data
