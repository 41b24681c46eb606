// transforms.rand_augment against timm's RandAugment (on Pillow 13): every op alone at several
// magnitudes, both signs and both resamplings, on a 1- and a 3-channel image; and whole
// rand_augment_transform calls (three configs) with timm's recorded choices replayed.

#include <deque>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "io/safetensors.hpp"
#include "recipe/recipe_refs.hpp"
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
  const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() +
                                                 "/rand_augment_calls.safetensors");
  for (const auto& c : r["calls"]) {
    SCOPED_TRACE(c.dump());
    const std::string key = c["key"];
    ra::Options o;
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

}  // namespace
