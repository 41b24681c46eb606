// Transform `random_erasing`: timm's RandomErasing, after normalize: boxes of the image set to 0
// (const), to one normal value per channel (rand) or to normal noise per pixel (pixel).

#include <cmath>
#include <string>

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include "random_erasing.hpp"
#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

// The sample's Rng as timm's `random` module.
struct RngAsRandom {
  Rng& rng;
  double uniform() { return rng.uniform(); }
  double uniform(double a, double b) { return a + (b - a) * rng.uniform(); }
  int64_t randint(int64_t a, int64_t b) { return rng.uniform_int(a, b); }
};

// Standard normal numbers from a seed: the same noise on either path.
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : rng_(seed) {}
  float next() { return static_cast<float>(rng_.normal()); }

 private:
  Rng rng_;
};

class RandomErasingTransform : public Transform, public BatchedTransform {
 public:
  RandomErasingTransform(ErasingOptions options, std::string mode)
      : o_(options), mode_(std::move(mode)) {}

  // Per box: top, left, h, w (h 0: no box) and the seed of its noise, after the coin.
  int draws_per_sample() const override { return 1 + 5 * static_cast<int>(o_.max_count); }

  void draw(Rng& rng, int64_t height, int64_t width, double* out) const override {
    RngAsRandom random{rng};
    const auto boxes = draw_erase_boxes(random, o_, height, width);
    out[0] = boxes.empty() ? 0 : 1;
    for (int64_t i = 0; i < o_.max_count; ++i) {
      double* b = out + 1 + 5 * i;
      const bool here = i < static_cast<int64_t>(boxes.size());
      b[0] = here ? boxes[i].top : 0;
      b[1] = here ? boxes[i].left : 0;
      b[2] = here ? boxes[i].h : 0;
      b[3] = here ? boxes[i].w : 0;
      // A 53-bit seed: exact in a double.
      b[4] = here && mode_ != "const" ? static_cast<double>(rng.next_u64() >> 11) : 0;
    }
  }

  void apply(cv::Mat& image, Rng& rng) const override {
    // Refused whether or not this sample is erased: validate's sample then meets it too.
    require_float(image.depth() == CV_32F || image.depth() == CV_64F);
    std::vector<double> drawn(static_cast<size_t>(draws_per_sample()));
    draw(rng, image.rows, image.cols, drawn.data());
    if (drawn[0] == 0) return;
    if (image.depth() != CV_32F) image.convertTo(image, CV_32F);
    const int channels = image.channels();
    for (int64_t i = 0; i < o_.max_count; ++i) {
      const double* b = drawn.data() + 1 + 5 * i;
      const auto top = static_cast<int>(b[0]), left = static_cast<int>(b[1]);
      const auto h = static_cast<int>(b[2]), w = static_cast<int>(b[3]);
      if (h == 0 || w == 0) continue;
      const auto fill = fill_values(channels, h, w, static_cast<uint64_t>(b[4]));
      for (int y = 0; y < h; ++y) {
        auto* row = image.ptr<float>(top + y) + static_cast<ptrdiff_t>(left) * channels;
        for (int x = 0; x < w; ++x)
          for (int c = 0; c < channels; ++c)
            row[x * channels + c] = fill[(static_cast<size_t>(c) * h + y) * w + x];
      }
    }
  }

  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    require_float(images.is_floating_point());
    const int64_t n = images.size(0), channels = images.size(1);
    const int64_t height = images.size(2), width = images.size(3);
    at::Tensor out = images.to(at::kFloat).clone();
    const at::Tensor d = draws.cpu();
    const auto* v = d.data_ptr<double>();
    const int64_t stride = draws_per_sample();
    // Each box is written where it is (a view of the sample), in order: later boxes paint
    // over earlier ones as timm's loop does.
    for (int64_t s = 0; s < n; ++s) {
      if (v[s * stride] == 0) continue;
      for (int64_t i = 0; i < o_.max_count; ++i) {
        const double* b = v + s * stride + 1 + 5 * i;
        const auto top = static_cast<int64_t>(b[0]), left = static_cast<int64_t>(b[1]);
        const auto h = static_cast<int64_t>(b[2]), w = static_cast<int64_t>(b[3]);
        if (h == 0 || w == 0 || top + h > height || left + w > width) continue;
        at::Tensor region = out[s].slice(1, top, top + h).slice(2, left, left + w);
        if (mode_ == "const") {
          region.zero_();
          continue;
        }
        const auto fill = fill_values(static_cast<int>(channels), static_cast<int>(h),
                                      static_cast<int>(w), static_cast<uint64_t>(b[4]));
        region.copy_(at::from_blob(const_cast<float*>(fill.data()), {channels, h, w}, at::kFloat)
                         .to(out.device()));
      }
    }
    return out;
  }

 private:
  void require_float(bool is_float) const {
    if (!is_float)
      throw DataError(
          "transform random_erasing: it erases normalized float images (timm applies it after "
          "the normalization): list it after normalize in data.train_transforms");
  }

  // The box's values in (channel, y, x) order: 0, one normal per channel, or one per pixel.
  std::vector<float> fill_values(int channels, int h, int w, uint64_t seed) const {
    std::vector<float> fill(static_cast<size_t>(channels) * h * w, 0.0f);
    if (mode_ == "const") return fill;
    NormalStream normal(seed);
    for (int c = 0; c < channels; ++c) {
      const float colour = mode_ == "rand" ? normal.next() : 0.0f;
      for (size_t k = 0; k < static_cast<size_t>(h) * w; ++k)
        fill[static_cast<size_t>(c) * h * w + k] = mode_ == "rand" ? colour : normal.next();
    }
    return fill;
  }

  ErasingOptions o_;
  std::string mode_;
};

}  // namespace

void register_random_erasing(Registry<TransformFactory>& registry) {
  registry.add(
      "random_erasing",
      [](const nlohmann::json& params) {
        ErasingOptions o;
        o.p = params.at("p").get<double>();
        o.min_area = params.at("min_area").get<double>();
        o.max_area = params.at("max_area").get<double>();
        o.min_aspect = params.at("min_aspect").get<double>();
        o.max_aspect = params.at("max_aspect").is_null() ? 1.0 / o.min_aspect
                                                         : params.at("max_aspect").get<double>();
        o.min_count = params.at("min_count").get<int64_t>();
        o.max_count =
            params.at("max_count").is_null() ? o.min_count : params.at("max_count").get<int64_t>();
        if (o.min_area > o.max_area)
          throw ConfigError("transform random_erasing: min_area " + std::to_string(o.min_area) +
                            " is above max_area " + std::to_string(o.max_area));
        if (o.max_count < o.min_count)
          throw ConfigError("transform random_erasing: max_count is below min_count");
        if (o.max_aspect < o.min_aspect)
          throw ConfigError("transform random_erasing: max_aspect is below min_aspect");
        return std::make_shared<RandomErasingTransform>(o, params.at("mode").get<std::string>());
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "timm's RandomErasing (train.py --reprob, --remode, --recount), on normalized float "
        "images: list it after normalize. With probability p, count boxes (min_count.."
        "max_count), each of U(min_area, max_area) / count of the image with aspect "
        "exp(U(log min_aspect, log max_aspect)), placed uniformly, up to 10 tries each to fit; "
        "their pixels become 0 (const), one standard normal value per channel (rand) or normal "
        "noise (pixel)."},
       {"properties",
        {{"p", schemas::transform_p(0.5)},
         {"mode",
          {{"enum", {"const", "rand", "pixel"}},
           {"default", "const"},
           {"description", "What the boxes hold: 0, a normal value per channel, normal noise."}}},
         {"min_area",
          {{"type", "number"},
           {"exclusiveMinimum", 0},
           {"maximum", 1},
           {"default", 0.02},
           {"description", "Smallest share of the image the boxes erase together."}}},
         {"max_area",
          {{"type", "number"},
           {"exclusiveMinimum", 0},
           {"maximum", 1},
           {"default", 1.0 / 3.0},
           {"description", "Largest share of the image the boxes erase together."}}},
         {"min_aspect",
          {{"type", "number"},
           {"exclusiveMinimum", 0},
           {"default", 0.3},
           {"description", "Smallest height / width of a box."}}},
         {"max_aspect",
          {{"type", {"number", "null"}},
           {"exclusiveMinimum", 0},
           {"default", nullptr},
           {"description", "Largest height / width of a box; null: 1 / min_aspect."}}},
         {"min_count",
          {{"type", "integer"},
           {"minimum", 1},
           {"default", 1},
           {"description", "Fewest boxes per erased image."}}},
         {"max_count",
          {{"type", {"integer", "null"}},
           {"minimum", 1},
           {"default", nullptr},
           {"description", "Most boxes per erased image (timm's --recount); null: min_count."}}}}}},
      "Random erasing of boxes after normalize (timm's RandomErasing)");
}

}  // namespace runner::data
