// transforms.rand_augment against timm's RandAugment (on Pillow 13): every op alone at several
// magnitudes, both signs and both resamplings, on a 1- and a 3-channel image, per sample and
// batched; and whole
// rand_augment_transform calls (three configs) with timm's recorded choices replayed.

#include <deque>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "io/safetensors.hpp"
#include "recipe/recipe_refs.hpp"
#include "transforms/rand_augment_batched.hpp"
#include "transforms/rand_augment_plan.hpp"

namespace {

namespace ra = runner::data::rand_augment;

cv::Mat mat_of(const torch::Tensor& hwc) {  // u8 [H, W, C]
  return cv::Mat(static_cast<int>(hwc.size(0)), static_cast<int>(hwc.size(1)),
                 CV_8UC(static_cast<int>(hwc.size(2))), hwc.data_ptr<uint8_t>())
      .clone();
}

// Pixels that differ, and by how much at most.
std::pair<int, int> difference(const cv::Mat& a, const cv::Mat& b) {
  int count = 0, most = 0;
  for (int y = 0; y < a.rows; ++y)
    for (int x = 0; x < a.cols * a.channels(); ++x) {
      const int d = std::abs(a.ptr<uint8_t>(y)[x] - b.ptr<uint8_t>(y)[x]);
      count += d != 0;
      most = std::max(most, d);
    }
  return {count, most};
}

nlohmann::json refs() {
  std::ifstream in(runner::test::recipe_refs_dir() + "/manifest.json");
  return in ? nlohmann::json::parse(in)["rand_augment"] : nlohmann::json();
}

TEST(RandAugmentParity, EveryOpEqualsTimmsOnPillow) {
  if (runner::test::recipe_refs_dir().empty())
    GTEST_SKIP() << "RUNNER_RECIPE_REFS is unset: run through ctest";
  const auto r = refs();
  ASSERT_GT(r["ops"].size(), 800u);
  const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() +
                                                 "/rand_augment_ops.safetensors");
  std::map<std::string, int> failures;
  for (const auto& c : r["ops"]) {
    const cv::Mat image = mat_of(file.find("image" + std::to_string(c["channels"].get<int>())));
    const auto op = static_cast<ra::Op>(c["op"].get<int>());
    const double argument = ra::op_argument(op, c["increasing"], c["magnitude"], c["negate"]);
    const cv::Mat ours = ra::apply_op(image, op, argument, c["bicubic"], {128, 128, 128});
    const auto [count, most] = difference(ours, mat_of(file.find(c["key"].get<std::string>())));
    if (count != 0) {
      ++failures[c["name"].get<std::string>()];
      ADD_FAILURE() << c.dump() << ": " << count << " values differ, by up to " << most;
    }
  }
  EXPECT_TRUE(failures.empty());
}

// The batched form (data.device): every case of a channel count as one sample of one mixed-op
// batch, each equal to timm's output.
TEST(RandAugmentParity, EveryOpBatchedEqualsTimmsOnPillow) {
  if (runner::test::recipe_refs_dir().empty())
    GTEST_SKIP() << "RUNNER_RECIPE_REFS is unset: run through ctest";
  const auto r = refs();
  const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() +
                                                 "/rand_augment_ops.safetensors");
  for (int channels : {1, 3}) {
    const torch::Tensor image = file.find("image" + std::to_string(channels)).permute({2, 0, 1});
    std::vector<ra::SampleOp> ops;
    std::vector<nlohmann::json> cases;
    for (const auto& c : r["ops"]) {
      if (c["channels"].get<int>() != channels) continue;
      const auto op = static_cast<ra::Op>(c["op"].get<int>());
      ops.push_back({op, ra::op_argument(op, c["increasing"], c["magnitude"], c["negate"]),
                     c["bicubic"], true});
      cases.push_back(c);
    }
    ASSERT_GT(ops.size(), 400u);
    const auto count = static_cast<int64_t>(ops.size());
    const torch::Tensor batch = image.unsqueeze(0).expand({count, -1, -1, -1}).contiguous();
    const torch::Tensor out = ra::apply_ops(batch, ops, {128, 128, 128});
    std::map<std::string, int> failures;
    for (size_t s = 0; s < cases.size(); ++s) {
      const torch::Tensor expected =
          file.find(cases[s]["key"].get<std::string>()).permute({2, 0, 1});
      const torch::Tensor diff =
          (out[static_cast<int64_t>(s)].to(torch::kInt) - expected.to(torch::kInt)).abs();
      if (diff.max().item<int>() != 0) {
        ++failures[cases[s]["name"].get<std::string>()];
        ADD_FAILURE() << cases[s].dump() << ": " << diff.gt(0).sum().item<int64_t>()
                      << " values differ, by up to " << diff.max().item<int>();
      }
    }
    EXPECT_TRUE(failures.empty()) << channels << " channels";
  }
}

// Varied images of an odd size, sample s with op s mod 15 at a magnitude, sign and resampling
// of its own.
struct VariedBatch {
  std::vector<cv::Mat> images;
  std::vector<ra::SampleOp> ops;
  torch::Tensor batch;  // u8 [N, C, H, W]
};

VariedBatch varied_batch(int rows, int cols, int channels) {
  cv::RNG rng(7);
  VariedBatch v;
  std::vector<torch::Tensor> chw;
  for (int s = 0; s < 150; ++s) {
    cv::Mat image(rows, cols, CV_8UC(channels));
    rng.fill(image, cv::RNG::UNIFORM, s % 7 == 0 ? 40 : 0, s % 5 == 0 ? 90 : 256);
    cv::GaussianBlur(image, image, {3, 3}, 0);  // some structure, as photos have
    v.images.push_back(image);
    chw.push_back(torch::from_blob(image.data, {rows, cols, channels}, torch::kByte)
                      .permute({2, 0, 1})
                      .clone());
    const auto op = static_cast<ra::Op>(s % ra::kOpCount);
    const double magnitude = rng.uniform(0.0, 10.0);
    const bool increasing = s % 2 == 0, negate = s % 3 == 0;
    v.ops.push_back(
        {op, ra::op_argument(op, increasing, magnitude, negate), s % 4 < 2, s % 11 != 0});
  }
  v.batch = torch::stack(chw);
  return v;
}

const std::array<double, 3> kFill{12, 200, 99};
const std::array<int, 3> kShapes[] = {{28, 28, 1}, {19, 33, 3}};

// The tensor form (what a GPU runs) on the CPU: each sample equals the per-sample op.
TEST(RandAugmentBatched, TensorFormEqualsThePerSampleOpsOnVariedImages) {
  for (const auto& [rows, cols, channels] : kShapes) {
    const VariedBatch v = varied_batch(rows, cols, channels);
    const torch::Tensor out = ra::apply_ops(v.batch, v.ops, kFill);
    for (size_t s = 0; s < v.ops.size(); ++s) {
      const auto& o = v.ops[s];
      const cv::Mat expected =
          o.applied ? ra::apply_op(v.images[s], o.op, o.argument, o.bicubic, kFill) : v.images[s];
      const cv::Mat got = mat_of(out[static_cast<int64_t>(s)].permute({1, 2, 0}).contiguous());
      const auto [count, most] = difference(got, expected);
      EXPECT_EQ(count, 0) << ra::op_name(o.op, false) << " sample " << s << " (" << rows << "x"
                          << cols << "x" << channels << "): by up to " << most;
    }
  }
}

// On a GPU (bench/gpu_check.sh runs it): the same bits as on the CPU.
TEST(RandAugmentBatched, OnCudaTheTensorFormEqualsTheCpus) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const auto& [rows, cols, channels] : kShapes) {
    const VariedBatch v = varied_batch(rows, cols, channels);
    const torch::Tensor cpu = ra::apply_ops(v.batch, v.ops, kFill);
    const torch::Tensor cuda = ra::apply_ops(v.batch.cuda(), v.ops, kFill);
    ASSERT_TRUE(cuda.is_cuda());
    const torch::Tensor diff = (cuda.cpu().to(torch::kInt) - cpu.to(torch::kInt)).abs();
    EXPECT_EQ(diff.max().item<int>(), 0) << diff.gt(0).sum().item<int64_t>() << " values differ";
  }
}

// timm's recorded draws, replayed where runner's plan asks for them.
struct Replayed {
  std::deque<double> choice, random_, gauss_, uniform_, pick;
  static double next(std::deque<double>& q, const char* what) {
    if (q.empty()) {
      ADD_FAILURE() << "runner drew one " << what << " more than timm";
      return 0;
    }
    const double v = q.front();
    q.pop_front();
    return v;
  }
  int choose_op() { return static_cast<int>(next(choice, "op choice")); }
  int choose_resampling() { return static_cast<int>(next(pick, "resampling")); }
  double random() { return next(random_, "random"); }
  double uniform(double, double) { return next(uniform_, "uniform"); }
  double gauss(double, double) { return next(gauss_, "gauss"); }
  bool used() const {
    return choice.empty() && random_.empty() && gauss_.empty() && uniform_.empty() && pick.empty();
  }
};

TEST(RandAugmentParity, WholeTransformsEqualTimmsWithItsDrawsReplayed) {
  if (runner::test::recipe_refs_dir().empty())
    GTEST_SKIP() << "RUNNER_RECIPE_REFS is unset: run through ctest";
  const auto r = refs();
  ASSERT_GT(r["calls"].size(), 20u);
  // Full strings and strings that leave sections out (timm's defaults fill them in).
  std::set<std::string> configs;
  for (const auto& c : r["calls"]) configs.insert(c["config"].get<std::string>());
  for (const char* want : {"rand-m9-mstd0.5-inc1", "rand-m9-inc1", "rand-n3-mstd0.5-p0.9",
                           "rand-mmax8-mstd2-inc1", "rand"})
    EXPECT_TRUE(configs.count(want)) << want << " has no recorded call: stale references?";
  const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() +
                                                 "/rand_augment_calls.safetensors");
  for (const auto& c : r["calls"]) {
    SCOPED_TRACE(c.dump());
    const std::string key = c["key"];
    ra::Options o;  // runner's defaults (m9, mstd0.5, inc1): the string must not keep them
    ra::apply_config_string(c["config"], o);
    Replayed replay{runner::test::recorded_draws(file.find(key + ".choice")),
                    runner::test::recorded_draws(file.find(key + ".random")),
                    runner::test::recorded_draws(file.find(key + ".gauss")),
                    runner::test::recorded_draws(file.find(key + ".uniform")),
                    runner::test::recorded_draws(file.find(key + ".pick"))};
    const auto plan = ra::plan_ops(replay, o);
    EXPECT_TRUE(replay.used()) << "runner drew fewer numbers than timm";
    cv::Mat image = mat_of(file.find(key + ".in"));
    for (const auto& step : plan) {
      if (!step.applied) continue;
      image = ra::apply_op(image, step.op,
                           ra::op_argument(step.op, o.increasing, step.magnitude, step.negate),
                           step.bicubic, {128, 128, 128});
    }
    const auto [count, most] = difference(image, mat_of(file.find(key + ".out")));
    EXPECT_EQ(count, 0) << "by up to " << most;
  }
}

TEST(RandAugmentConfig, TimmsStringsSetTheOptionsAndABadSectionSaysWhatToWrite) {
  ra::Options o;
  ra::apply_config_string("rand-m7-n3-mstd101-mmax12-inc0-p0.8", o);
  EXPECT_EQ(o.magnitude, 7);
  EXPECT_EQ(o.num_ops, 3);
  EXPECT_TRUE(std::isinf(o.magnitude_std));
  EXPECT_EQ(o.magnitude_max, 12);
  EXPECT_FALSE(o.increasing);
  EXPECT_DOUBLE_EQ(o.p, 0.8);
  try {
    ra::apply_config_string("rand-m9-xx", o);
    FAIL() << "rand-m9-xx was taken";
  } catch (const runner::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'xx' is no section"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rand-m9-mstd0.5-inc1"), std::string::npos) << e.what();
  }
}

// timm 1.0.31's rand_augment_transform: a section left out is timm's default, never the value
// the options held before (the keys' own defaults, m9 mstd0.5 inc1, are runner's recipe).
TEST(RandAugmentConfig, ASectionTheStringLeavesOutTakesTimmsDefault) {
  ra::Options o;
  o.num_ops = 5;
  o.magnitude = 3;
  o.magnitude_std = 2;
  o.magnitude_max = 4;
  o.increasing = true;
  o.p = 0.1;
  o.interpolation = "bicubic";
  ra::apply_config_string("rand-m9-inc1", o);
  EXPECT_EQ(o.magnitude, 9);
  EXPECT_EQ(o.magnitude_std, 0) << "timm's AugmentOp: hparams.get('magnitude_std', 0)";
  EXPECT_TRUE(o.increasing);
  EXPECT_EQ(o.num_ops, 2);
  EXPECT_EQ(o.magnitude_max, 10);
  EXPECT_DOUBLE_EQ(o.p, 0.5);
  EXPECT_EQ(o.interpolation, "bicubic") << "the string does not cover the resampling";
  ra::apply_config_string("rand", o);
  EXPECT_EQ(o.magnitude, 10);
  EXPECT_FALSE(o.increasing);
  ra::apply_config_string("rand-mmax0", o);
  EXPECT_EQ(o.magnitude_max, 10) << "timm clips at `magnitude_max or 10`";
}

// Pillow 12 and later refuse to posterize to 0 bits (timm raises "bits must be between or equal
// to 1 and 8"); runner gives the black image earlier Pillow gave, per sample and batched alike.
TEST(RandAugmentOps, PosterizeToZeroBitsIsTheBlackImageOfEarlierPillow) {
  const double zero_bits = ra::op_argument(ra::Op::kPosterize, true, 10, false);
  EXPECT_EQ(zero_bits, 0) << "PosterizeIncreasing at magnitude 10";
  EXPECT_EQ(ra::op_argument(ra::Op::kPosterize, false, 0, false), 0) << "Posterize at 0";
  cv::Mat image(9, 7, CV_8UC3);
  cv::randu(image, 0, 256);
  const cv::Mat out = ra::apply_op(image, ra::Op::kPosterize, zero_bits, false, {128, 128, 128});
  EXPECT_EQ(cv::countNonZero(out.reshape(1)), 0);
  const torch::Tensor batch =
      torch::from_blob(image.data, {1, 9, 7, 3}, torch::kByte).permute({0, 3, 1, 2}).clone();
  const torch::Tensor batched =
      ra::apply_ops(batch, {{ra::Op::kPosterize, zero_bits, false, true}}, {128, 128, 128});
  EXPECT_EQ(batched.count_nonzero().item<int64_t>(), 0);
}

}  // namespace
