// Transform `rand_augment`: timm's RandAugment (rand_augment_transform, e.g. rand-m9-mstd0.5-inc1)
// on u8 images of 1 or 3 channels, before normalize: num_ops of timm's 15 ops chosen with
// replacement, each applied with probability p at a magnitude ~ N(m, mstd) clipped to
// [0, mmax], with Pillow's arithmetic (rand_augment_ops.hpp).

#include <cmath>
#include <regex>
#include <string>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <opencv2/core.hpp>

#include "rand_augment_batched.hpp"
#include "rand_augment_plan.hpp"
#include "runner/data/batched_transform.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "transform_params.hpp"

namespace runner::data {
namespace {

using rand_augment::Op;
using rand_augment::Options;
using rand_augment::PlannedOp;

// The sample's Rng as timm's numpy and `random` draws.
struct RngAsTimm {
  Rng& rng;
  int choose_op() { return static_cast<int>(rng.uniform_int(0, rand_augment::kOpCount - 1)); }
  int choose_resampling() { return static_cast<int>(rng.uniform_int(0, 1)); }
  double random() { return rng.uniform(); }
  double uniform(double a, double b) { return a + (b - a) * rng.uniform(); }
  double gauss(double mean, double std) { return mean + std * rng.normal(); }
};

constexpr int kPerOp = 5;  // op, applied, magnitude, negate, bicubic

class RandAugmentTransform : public Transform, public BatchedTransform {
 public:
  RandAugmentTransform(Options options, std::array<double, 3> fill)
      : o_(std::move(options)), fill_(fill) {}

  int draws_per_sample() const override { return kPerOp * o_.num_ops; }

  void draw(Rng& rng, int64_t, int64_t, double* out) const override {
    RngAsTimm random{rng};
    const auto plan = rand_augment::plan_ops(random, o_);
    for (size_t i = 0; i < plan.size(); ++i) {
      double* d = out + kPerOp * i;
      d[0] = static_cast<double>(plan[i].op);
      d[1] = plan[i].applied ? 1 : 0;
      d[2] = plan[i].magnitude;
      d[3] = plan[i].negate ? 1 : 0;
      d[4] = plan[i].bicubic ? 1 : 0;
    }
  }

  void apply(cv::Mat& image, Rng& rng) const override {
    std::vector<double> drawn(static_cast<size_t>(draws_per_sample()));
    draw(rng, image.rows, image.cols, drawn.data());
    image = augmented(image, drawn.data());
  }

  // On a GPU each step runs over the whole batch as tensor ops (rand_augment_batched.hpp); on
  // the CPU the per-sample code over the samples in parallel, 4x faster there than the tensor
  // form (bench/RESULTS.md). Both equal the per-sample path bit for bit.
  at::Tensor apply_batch(const at::Tensor& images, const at::Tensor& draws) const override {
    if (images.scalar_type() != at::kByte) not_u8();
    const at::Tensor d = draws.cpu().contiguous();
    if (images.is_cpu()) return augmented_on_host(images, d);
    const auto drawn = d.accessor<double, 2>();
    at::Tensor out = images;
    for (int i = 0; i < o_.num_ops; ++i) {
      std::vector<rand_augment::SampleOp> ops(static_cast<size_t>(images.size(0)));
      for (int64_t s = 0; s < images.size(0); ++s) {
        const double* step = &drawn[s][kPerOp * i];
        auto& o = ops[static_cast<size_t>(s)];
        o.op = static_cast<Op>(static_cast<int>(step[0]));
        o.applied = step[1] != 0;
        o.argument = rand_augment::op_argument(o.op, o_.increasing, step[2], step[3] != 0);
        o.bicubic = step[4] != 0;
      }
      out = rand_augment::apply_ops(out, ops, fill_);
    }
    return out;
  }

 private:
  [[noreturn]] static void not_u8() {
    throw DataError(
        "transform rand_augment: it takes u8 images (timm applies it to PIL images): list it "
        "before normalize in data.train_transforms");
  }

  at::Tensor augmented_on_host(const at::Tensor& images, const at::Tensor& draws) const {
    const at::Tensor host = images.permute({0, 2, 3, 1}).contiguous();
    at::Tensor out = at::empty_like(host);
    const auto c = static_cast<int>(host.size(3));
    at::parallel_for(0, host.size(0), 1, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        cv::Mat image(static_cast<int>(host.size(1)), static_cast<int>(host.size(2)), CV_8UC(c),
                      host[s].data_ptr<uint8_t>());
        const cv::Mat result = augmented(image, draws[s].data_ptr<double>());
        cv::Mat target(result.rows, result.cols, result.type(), out[s].data_ptr<uint8_t>());
        result.copyTo(target);
      }
    });
    return out.permute({0, 3, 1, 2}).contiguous();
  }

  cv::Mat augmented(const cv::Mat& image, const double* drawn) const {
    if (image.depth() != CV_8U) not_u8();
    cv::Mat current = image;
    for (int i = 0; i < o_.num_ops; ++i) {
      const double* d = drawn + kPerOp * i;
      if (d[1] == 0) continue;
      const auto op = static_cast<Op>(static_cast<int>(d[0]));
      const double argument = rand_augment::op_argument(op, o_.increasing, d[2], d[3] != 0);
      current = rand_augment::apply_op(current, op, argument, d[4] != 0, fill_);
    }
    return current.data == image.data ? image.clone() : current;
  }

  Options o_;
  std::array<double, 3> fill_;
};

}  // namespace

void register_rand_augment(Registry<TransformFactory>& registry) {
  registry.add(
      "rand_augment",
      [](const nlohmann::json& params) {
        Options o;
        o.num_ops = params.at("num_ops").get<int>();
        o.magnitude = params.at("magnitude").get<double>();
        o.magnitude_std = params.at("magnitude_std").get<double>();
        if (o.magnitude_std > 100) o.magnitude_std = std::numeric_limits<double>::infinity();
        o.magnitude_max = params.at("magnitude_max").get<double>();
        o.increasing = params.at("increasing").get<bool>();
        o.p = params.at("p").get<double>();
        o.interpolation = params.at("interpolation").get<std::string>();
        if (params.at("config").is_string())
          rand_augment::apply_config_string(params.at("config").get<std::string>(), o);
        std::array<double, 3> fill{128, 128, 128};
        const auto& f = params.at("fill");
        if (f.is_number()) fill = {f.get<double>(), f.get<double>(), f.get<double>()};
        if (f.is_array())
          for (size_t i = 0; i < 3; ++i) fill[i] = f.at(std::min(i, f.size() - 1)).get<double>();
        return std::make_shared<RandAugmentTransform>(o, fill);
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"description",
        "timm's RandAugment (train.py --aa rand-m9-mstd0.5-inc1), before normalize, on u8 "
        "images of 1 or 3 channels: num_ops ops chosen with replacement from timm's 15 "
        "(AutoContrast, Equalize, Invert, Rotate, Posterize, Solarize, SolarizeAdd, Color, "
        "Contrast, Brightness, Sharpness, ShearX, ShearY, TranslateXRel, TranslateYRel; their "
        "Increasing forms with increasing), each applied with probability p at magnitude "
        "N(magnitude, magnitude_std) clipped to [0, magnitude_max], with Pillow's arithmetic. "
        "The batched form (data.device) runs as tensor ops on a GPU and as the per-sample code "
        "over the batch's samples in parallel on the CPU (faster there), equal to the "
        "per-sample form bit for bit."},
       {"properties",
        {{"config",
          {{"type", {"string", "null"}},
           {"pattern", R"(^rand(-(mstd|mmax|inc|m|n|p)[0-9]+(\.[0-9]*)?)*$)"},
           {"x-runner-hint",
            "write timm's form, e.g. rand-m9-mstd0.5-inc1 (sections m, n, p, mstd, mmax, inc "
            "after 'rand')"},
           {"default", nullptr},
           {"x-runner-covers",
            {{"num_ops", "n"},
             {"magnitude", "m"},
             {"magnitude_std", "mstd"},
             {"magnitude_max", "mmax"},
             {"increasing", "inc"},
             {"p", "p"}}},
           {"description",
            "timm's string, e.g. rand-m9-mstd0.5-inc1 (sections m, n, p, mstd, mmax, inc), "
            "meaning what it means to timm 1.0.31: a section it leaves out takes timm's "
            "default (m10, n2, p0.5, mstd0, mmax10, inc0), not the keys' defaults below. The "
            "keys it covers (num_ops, magnitude, magnitude_std, magnitude_max, increasing, p) "
            "cannot be set beside it; fill and interpolation can."}}},
         {"num_ops",
          {{"type", "integer"},
           {"minimum", 1},
           {"default", 2},
           {"description", "Ops per image (timm's n)."}}},
         {"magnitude",
          {{"type", "number"},
           {"minimum", 0},
           {"default", 9},
           {"description", "timm's m, on its 0..10 scale."}}},
         {"magnitude_std",
          {{"type", "number"},
           {"minimum", 0},
           {"default", 0.5},
           {"description", "timm's mstd: the magnitude's noise (above 100: uniform in 0..m)."}}},
         {"magnitude_max",
          {{"type", "number"},
           {"exclusiveMinimum", 0},
           {"default", 10},
           {"description", "timm's mmax: the magnitude's upper clip."}}},
         {"increasing",
          {{"type", "boolean"},
           {"default", true},
           {"description",
            "timm's inc1: Posterize, Solarize and the enhancements grow stronger with the "
            "magnitude (and the enhancements go either way)."}}},
         {"p", schemas::transform_p(0.5)},
         {"fill",
          {{"type", {"number", "array"}},
           {"items", {{"type", "number"}, {"minimum", 0}, {"maximum", 255}}},
           {"minItems", 1},
           {"maxItems", 3},
           {"default", 128},
           {"description",
            "What the affine ops uncover: one value or one per channel (timm's img_mean, the "
            "dataset mean x 255 in its train.py)."}}},
         {"interpolation",
          {{"enum", {"random", "bilinear", "bicubic"}},
           {"default", "random"},
           {"description",
            "The affine ops' resampling: random (timm's default: bilinear or bicubic per op), "
            "bilinear or bicubic (Pillow's filters)."}}}}}},
      "RandAugment with timm's ops and magnitudes (Pillow's arithmetic)");
}

}  // namespace runner::data
