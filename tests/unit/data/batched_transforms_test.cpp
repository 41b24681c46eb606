// Every batched transform (data.device) against its per-sample OpenCV twin: the same seed, epoch
// and sample indices give the same augmentation, bit for bit where the transform says so, within
// its stated tolerance where not (resize: OpenCV's u8 resize works in 11-bit fixed point).

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <opencv2/core.hpp>

#include "data/batch.hpp"
#include "data/batched_pipeline.hpp"
#include "data/data_test_util.hpp"
#include "data/pipeline.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

// Random u8 images with some smooth structure (a gradient plus noise), as digits are not noise.
std::vector<cv::Mat> test_images(int count, int rows, int cols, int channels, uint64_t seed) {
  cv::RNG rng(seed);
  std::vector<cv::Mat> images;
  for (int i = 0; i < count; ++i) {
    cv::Mat noise(rows, cols, CV_8UC(channels)), image(rows, cols, CV_8UC(channels));
    rng.fill(noise, cv::RNG::UNIFORM, 0, 256);
    for (int y = 0; y < rows; ++y)
      for (int x = 0; x < cols * channels; ++x)
        image.ptr<uint8_t>(y)[x] = static_cast<uint8_t>(
            (noise.ptr<uint8_t>(y)[x] / 2 + (x * 255 / (cols * channels)) / 2 + i) % 256);
    images.push_back(image);
  }
  return images;
}

std::vector<int64_t> sample_indices(size_t count) {
  std::vector<int64_t> indices;
  for (size_t i = 0; i < count; ++i) indices.push_back(static_cast<int64_t>(1000 + 3 * i));
  return indices;
}

Pipeline pipeline_of(const nlohmann::json& entries) {
  return build_pipeline(entries, runner::registries().transforms);
}

torch::Tensor per_sample(const Pipeline& pipeline, const std::vector<cv::Mat>& images,
                         const std::vector<int64_t>& indices, uint64_t seed, uint64_t epoch) {
  std::vector<Sample> samples;
  std::vector<size_t> positions;
  for (size_t i = 0; i < images.size(); ++i) {
    Sample sample{images[i].clone(), 0};
    pipeline.apply(sample, seed, epoch, static_cast<uint64_t>(indices[i]));
    samples.push_back(sample);
    positions.push_back(static_cast<size_t>(indices[i]));
  }
  return collate(samples, positions, std::vector<bool>(samples.size(), false)).images;
}

torch::Tensor batched(const Pipeline& pipeline, const std::vector<cv::Mat>& images,
                      const std::vector<int64_t>& indices, uint64_t seed, uint64_t epoch) {
  std::vector<torch::Tensor> chw;
  for (const cv::Mat& image : images)
    chw.push_back(
        torch::from_blob(image.data, {image.rows, image.cols, image.channels()}, torch::kByte)
            .permute({2, 0, 1})
            .clone());
  return BatchedPipeline(pipeline, "data.train_transforms")
      .apply(torch::stack(chw), indices, seed, epoch);
}

struct Difference {
  double max = 0;
  double share = 0;           ///< of elements that differ at all
  double share_over_one = 0;  ///< of elements that differ by more than 1 (one u8 level)
};

// Per-sample vs batched over 300 images, seeds 1, 7, 42 and epochs 0, 1.
Difference compare(const nlohmann::json& entries, int rows = 28, int cols = 28, int channels = 1) {
  const Pipeline pipeline = pipeline_of(entries);
  Difference worst;
  for (uint64_t seed : {1, 7, 42}) {
    for (uint64_t epoch : {0, 1}) {
      const auto images = test_images(300, rows, cols, channels, seed * 10 + epoch);
      const auto indices = sample_indices(images.size());
      const torch::Tensor expected = per_sample(pipeline, images, indices, seed, epoch);
      const torch::Tensor got = batched(pipeline, images, indices, seed, epoch);
      EXPECT_EQ(got.sizes(), expected.sizes()) << entries.dump();
      if (got.sizes() != expected.sizes()) return {1e9, 1};
      const torch::Tensor diff = (got - expected).abs();
      worst.max = std::max(worst.max, diff.max().item<double>());
      worst.share = std::max(worst.share, diff.gt(0).to(torch::kDouble).mean().item<double>());
      worst.share_over_one =
          std::max(worst.share_over_one, diff.gt(1).to(torch::kDouble).mean().item<double>());
    }
  }
  return worst;
}

TEST(BatchedTransforms, FlipsRotationsAndBrightnessContrastEqualThePerSamplePathExactly) {
  for (const char* entries : {
           R"([{"name": "horizontal_flip", "p": 0.5}])",
           R"([{"name": "vertical_flip", "p": 0.3}])",
           R"([{"name": "random_rotate90", "p": 0.7}])",
           R"([{"name": "random_brightness_contrast", "p": 0.5}])",
           R"([{"name": "random_brightness_contrast", "p": 0.8, "brightness_by_max": false,
                "brightness_limit": [-0.3, 0.4], "contrast_limit": 0.5}])",
           R"([{"name": "horizontal_flip"}, {"name": "vertical_flip"},
               {"name": "random_rotate90"}, {"name": "random_brightness_contrast", "p": 0.9}])",
       }) {
    const Difference d = compare(nlohmann::json::parse(entries));
    EXPECT_EQ(d.max, 0.0) << entries;
  }
  // Three channels: per-channel means in brightness_by_max false, flips of interleaved pixels.
  const Difference rgb = compare(nlohmann::json::parse(R"([
      {"name": "horizontal_flip"},
      {"name": "random_brightness_contrast", "p": 1.0, "brightness_by_max": false}])"),
                                 20, 20, 3);
  EXPECT_EQ(rgb.max, 0.0);
}

TEST(BatchedTransforms, NormalizeAndToTensorAreTheSameFloat32Expression) {
  EXPECT_EQ(
      compare(nlohmann::json::parse(R"([{"name": "normalize", "mean": 0.2860, "std": 0.3530}])"))
          .max,
      0.0);
  EXPECT_EQ(compare(nlohmann::json::parse(R"([{"name": "to_tensor"}])")).max, 0.0);
  EXPECT_EQ(compare(nlohmann::json::parse(R"([{"name": "normalize"}])"), 12, 10, 3).max, 0.0);
  // Float input to normalize (after to_tensor): the same (x - m) * d.
  EXPECT_EQ(compare(nlohmann::json::parse(R"([{"name": "to_tensor"},
                                              {"name": "normalize", "mean": 0.5, "std": 0.25}])"))
                .max,
            0.0);
}

TEST(BatchedTransforms, ResizeOfU8ImagesIsWithinOneLevelOfOpenCv) {
  for (const char* interpolation : {"lanczos4", "cubic", "linear", "area", "nearest"}) {
    // Up, down, and one axis each way (OpenCV then picks its method from both scales).
    for (auto [height, width] : {std::pair{56, 56}, std::pair{20, 24}, std::pair{20, 40}}) {
      const nlohmann::json entries = {{{"name", "resize"},
                                       {"height", height},
                                       {"width", width},
                                       {"interpolation", interpolation}}};
      const Difference d = compare(entries);
      EXPECT_LE(d.max, 1.0) << entries.dump();
      // OpenCV's fixed point rounds a minority of pixels the other way, never most of them.
      EXPECT_LT(d.share, 0.2) << entries.dump();
    }
  }
}

TEST(BatchedTransforms, ResizeOfFloatImagesIsOpenCvsFloatResizeToFloatRounding) {
  // cv::resize on float images is what the two matrices reproduce: ~1e-4 of 255 at most.
  for (const char* interpolation : {"lanczos4", "cubic", "linear", "area"}) {
    const nlohmann::json entries = {
        {{"name", "to_tensor"}},
        {{"name", "resize"}, {"height", 56}, {"width", 56}, {"interpolation", interpolation}}};
    EXPECT_LE(compare(entries).max, 255 * 1e-4) << entries.dump();
  }
}

TEST(BatchedTransforms, RandomResizedCropIsOpenCvsResizeOfTheSameBoxes) {
  // The box depends on the image size as it reaches the crop: a resize before it must be seen.
  for (const char* interpolation : {"linear", "lanczos4", "area", "nearest"}) {
    const nlohmann::json crop = {{"name", "random_resized_crop"},
                                 {"height", 20},
                                 {"width", 24},
                                 {"interpolation", interpolation}};
    Difference d = compare(nlohmann::json::array({crop}));
    EXPECT_LE(d.max, 1.0) << crop.dump();
    EXPECT_LT(d.share, 0.2) << crop.dump();
    d = compare(nlohmann::json::array(
        {nlohmann::json{{"name", "resize"}, {"height", 40}, {"width", 36}}, crop}));
    EXPECT_LE(d.max, 2.0) << crop.dump();  // two u8 resizes: one level each
    // Float images: the per-sample float resize, to float rounding.
    EXPECT_LE(compare(nlohmann::json::array({nlohmann::json{{"name", "to_tensor"}}, crop})).max,
              255 * 1e-4)
        << crop.dump();
  }
  // p < 1 where the output size is the input's: uncropped samples pass through unchanged.
  EXPECT_LE(compare(nlohmann::json::parse(R"([{"name": "random_resized_crop", "p": 0.5,
                                              "height": 28, "width": 28}])"))
                .max,
            1.0);
  // p < 1 with another output size: two sizes in a batch, refused (collate refuses them too).
  const Pipeline mixed = pipeline_of(nlohmann::json::parse(R"([
      {"name": "random_resized_crop", "p": 0.5, "height": 20, "width": 20}])"));
  const auto images = test_images(32, 28, 28, 1, 5);
  EXPECT_THROW(batched(mixed, images, sample_indices(images.size()), 1, 0), DataError);
}

TEST(BatchedTransforms, RandomErasingErasesTheSameBoxesWithTheSameValues) {
  for (const char* mode : {"const", "rand", "pixel"}) {
    const auto entries = nlohmann::json::parse(
        std::string(
            R"([{"name": "normalize", "mean": 0.5, "std": 0.25}, {"name": "random_erasing", "p": 0.7,
                        "max_count": 3, "mode": ")") +
        mode + R"("}])");
    EXPECT_EQ(compare(entries).max, 0.0) << mode;
    EXPECT_EQ(compare(entries, 20, 14, 3).max, 0.0) << mode << " rgb";
  }
}

TEST(BatchedTransforms, RandAugmentEqualsThePerSamplePathExactly) {
  // timm's default, every op at full strength three times over with bicubic and a colour fill,
  // and strong noise with bilinear only: each op's tensor form on mixed-op batches.
  for (const char* params :
       {R"("config": "rand-m9-mstd0.5-inc1", "p": 0.7)",
        R"("config": "rand-n3-m10-mstd100-inc0", "p": 1.0, "interpolation": "bicubic",
            "fill": [0, 64, 255])",
        R"("num_ops": 4, "magnitude": 5, "magnitude_std": 3, "interpolation": "bilinear",
            "fill": 17)"}) {
    const auto entries = nlohmann::json::parse(std::string(R"([{"name": "rand_augment", )") +
                                               params + R"(}, {"name": "normalize", "mean": 0.5,
                                               "std": 0.25}])");
    EXPECT_EQ(compare(entries).max, 0.0) << params;
    EXPECT_EQ(compare(entries, 20, 14, 3).max, 0.0) << params << " rgb";
  }
}

TEST(BatchedTransforms, RandomErasingBeforeNormalizeIsAClearError) {
  const auto entries = nlohmann::json::parse(R"([{"name": "random_erasing", "p": 1.0}])");
  try {
    compare(entries);
    FAIL() << "u8 images were erased";
  } catch (const runner::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("after normalize"), std::string::npos) << e.what();
  }
}

TEST(BatchedTransforms, TheReferenceWorkloadsChainMatchesWithinOneResizeLevel) {
  // The original's transforms: flips, brightness/contrast, Lanczos resize to 56, normalize.
  const nlohmann::json entries = nlohmann::json::parse(R"([
      {"name": "horizontal_flip", "p": 0.5}, {"name": "vertical_flip", "p": 0.5},
      {"name": "random_brightness_contrast", "p": 0.2},
      {"name": "resize", "height": 56, "width": 56, "interpolation": "lanczos4"},
      {"name": "normalize", "mean": 0.1310, "std": 0.30854}])");
  const Difference d = compare(entries);
  // One u8 level after normalize: 1 / (0.30854 * 255), plus float32 rounding.
  EXPECT_LE(d.max, 1.0 / (0.30854 * 255) + 1e-5);
  EXPECT_LT(d.share, 0.2);
}

TEST(BatchedTransforms, ShiftScaleRotateIsWarpAffineWithinItsCoordinateRounding) {
  // warpAffine rounds source coordinates to 1/32 pixel, grid_sample does not: a pixel may differ
  // by the image's change over 1/64 pixel in x and y. These test images change by up to ~130
  // levels between neighbours, so up to 8 levels (u8 and float alike, measured 7-8), and more
  // than one level at ~8-12% of pixels. A wrong border mode, centre or interpolation differs by
  // tens of levels. Nearest picks the other neighbour where the rounded coordinate is a tie or
  // within 1/64 pixel of one: measured at 0.08% of pixels.
  for (const char* border : {"constant", "replicate", "reflect", "reflect_101"}) {
    for (const char* interpolation : {"linear", "cubic", "area", "nearest"}) {
      const nlohmann::json entry = {{"name", "shift_scale_rotate"},
                                    {"p", 0.8},
                                    {"border_mode", border},
                                    {"value", std::string(border) == "constant" ? 77 : 0},
                                    {"interpolation", interpolation}};
      const Difference u8 = compare(nlohmann::json::array({entry}));
      const Difference f32 =
          compare(nlohmann::json::array({nlohmann::json{{"name", "to_tensor"}}, entry}));
      if (std::string(interpolation) == "nearest") {
        EXPECT_LT(u8.share, 0.002) << entry.dump();
        EXPECT_LT(f32.share, 0.002) << entry.dump();
        continue;
      }
      EXPECT_LE(u8.max, 10.0) << entry.dump();
      EXPECT_LT(u8.share_over_one, 0.15) << entry.dump();
      EXPECT_LE(f32.max, 10.0) << entry.dump();
    }
  }
  // Float images keep their values outside 0..255 (no rounding or saturation).
  const Difference wide = compare(nlohmann::json::parse(R"([{"name": "to_tensor"},
      {"name": "normalize", "mean": 0.9, "std": 0.001},
      {"name": "shift_scale_rotate", "p": 1.0, "border_mode": "constant", "value": -3}])"));
  EXPECT_LE(wide.max, 10.0 / (0.001 * 255));
}

TEST(BatchedTransforms, ATransformWithoutABatchedFormIsAConfigErrorNamingIt) {
  const Pipeline pipeline = pipeline_of(nlohmann::json::parse(R"([
      {"name": "horizontal_flip"}, {"name": "shift_scale_rotate", "border_mode": "wrap"}])"));
  try {
    BatchedPipeline(pipeline, "data.train_transforms");
    ADD_FAILURE() << "shift_scale_rotate with border_mode wrap accepted";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("data.train_transforms[1] shift_scale_rotate has no batched form with "
                           "border_mode wrap"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("data.device: loader"), std::string::npos) << message;
  }
  // The same transform with a border grid_sample has is accepted.
  EXPECT_NO_THROW(BatchedPipeline(
      pipeline_of(nlohmann::json::parse(R"([{"name": "shift_scale_rotate"}])")), "list"));
}

TEST(BatchedTransforms, QuarterTurnsOfNonSquareBatchesAreRefused) {
  const Pipeline pipeline = pipeline_of(nlohmann::json::parse(R"([
      {"name": "random_rotate90", "p": 1.0}])"));
  const auto images = test_images(16, 10, 12, 1, 3);
  EXPECT_THROW(batched(pipeline, images, sample_indices(images.size()), 1, 0), DataError);
}

}  // namespace
}  // namespace runner::data
