// Dataset `synthetic`: deterministic random images for tests and benchmarks; each class has its
// own random binary pattern, each sample is its class pattern blended with noise (learnable).

#include "datasets.hpp"
#include "runner/data/dataset.hpp"
#include "runner/data/rng.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(size_t size, uint64_t seed, uint64_t split, int height, int width, int channels,
                   int64_t num_classes, double noise, bool labelled)
      : size_(size),
        seed_(seed),
        split_(split),
        height_(height),
        width_(width),
        channels_(channels),
        num_classes_(num_classes),
        noise_(noise),
        labelled_(labelled) {}
  size_t size() const override { return size_; }
  bool has_labels() const override { return labelled_; }
  int64_t label(size_t index) const override {
    if (!labelled_) return -1;
    return Rng(seed_, split_, index).uniform_int(0, num_classes_ - 1);
  }
  Sample get(size_t index) const override {
    if (index >= size_) throw DataError("synthetic dataset: sample index out of range");
    Rng rng(seed_, split_, index);
    const int64_t cls = rng.uniform_int(0, num_classes_ - 1);
    Sample s;
    s.label = labelled_ ? cls : -1;
    s.image.create(height_, width_, CV_8UC(channels_));
    const int row_len = width_ * channels_;
    for (int y = 0; y < height_; ++y) {
      // The class pattern: one stream per (class, row), independent of the sample.
      Rng pattern(seed_ ^ 0xC1A55ULL, static_cast<uint64_t>(cls), static_cast<uint64_t>(y));
      uint8_t* row = s.image.ptr<uint8_t>(y);
      for (int x = 0; x < row_len; ++x) {
        const double base = (pattern.next_u64() & 1) ? 255.0 : 0.0;
        const double v = (1.0 - noise_) * base + noise_ * 255.0 * rng.uniform();
        row[x] = static_cast<uint8_t>(v + 0.5);
      }
    }
    return s;
  }
  std::string describe() const override {
    return "synthetic(" + std::to_string(size_) + " x " + std::to_string(height_) + "x" +
           std::to_string(width_) + "x" + std::to_string(channels_) + ")";
  }

 private:
  size_t size_;
  uint64_t seed_, split_;
  int height_, width_, channels_;
  int64_t num_classes_;
  double noise_;
  bool labelled_;
};

DatasetSplits make_synthetic(const nlohmann::json& params, const DatasetContext& context) {
  const uint64_t seed =
      params.at("seed").is_null() ? context.seed : params.at("seed").get<uint64_t>();
  const int h = params.at("height").get<int>(), w = params.at("width").get<int>();
  const int c = params.at("channels").get<int>();
  const int64_t nc = params.at("num_classes").get<int64_t>();
  const double noise = params.at("noise").get<double>();
  auto make = [&](const char* key, uint64_t split, bool labelled) -> std::shared_ptr<Dataset> {
    const size_t n = params.at(key).get<size_t>();
    if (n == 0) return nullptr;
    return std::make_shared<SyntheticDataset>(n, seed, split, h, w, c, nc, noise, labelled);
  };
  DatasetSplits splits;
  splits.train = make("train_size", 0, true);
  splits.val = make("val_size", 1, true);
  splits.test = make("test_size", 2, true);
  splits.num_classes = nc;
  return splits;
}

nlohmann::json int_property(int64_t def, int64_t min, const char* description) {
  return {{"type", "integer"}, {"minimum", min}, {"default", def}, {"description", description}};
}

}  // namespace

void register_synthetic(Registry<DatasetFactory>& registry) {
  registry.add(
      "synthetic", make_synthetic,
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "Sample i of a split: label = Rng(seed, split, i) uniform in [0, num_classes); pixel = "
        "round((1-noise)*P[label] + noise*255*U(0,1)), P[label] a fixed random 0/255 pattern per "
        "class. Same seed, same data."},
       {"properties",
        {{"train_size", int_property(1000, 1, "Training samples.")},
         {"val_size", int_property(200, 0, "Validation samples (0: no validation split).")},
         {"test_size", int_property(200, 0, "Test samples (0: no test split).")},
         {"height", int_property(28, 1, "Image height.")},
         {"width", int_property(28, 1, "Image width.")},
         {"channels",
          {{"type", "integer"},
           {"minimum", 1},
           {"maximum", 4},
           {"default", 1},
           {"description", "Channels (u8 images)."}}},
         {"num_classes", int_property(10, 1, "Number of classes.")},
         {"noise",
          {{"type", "number"},
           {"minimum", 0},
           {"maximum", 1},
           {"default", 0.5},
           {"description", "Share of noise in each pixel (0: the pure class pattern)."}}},
         {"seed",
          {{"type", {"integer", "null"}},
           {"default", nullptr},
           {"description", "Data seed; null uses the experiment's seed."}}}}}},
      "Deterministic random class-pattern images (tests, benchmarks)");
}

}  // namespace runner::data
