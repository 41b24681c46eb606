// Transforms against hand-computed values on tiny images.

#include <set>

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "data/data_test_util.hpp"
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

}  // namespace
}  // namespace runner::data
