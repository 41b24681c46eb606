// transforms.random_erasing against timm's RandomErasing: the boxes it erases, from the random
// numbers timm drew (replayed), and the erased images (mode const); and over many images of the
// run's own draws, the share erased and the erased area within the configured bounds.

#include <deque>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "recipe/recipe_refs.hpp"
#include "runner/data/rng.hpp"
#include "transforms/random_erasing.hpp"

namespace {

using runner::data::ErasingOptions;

// timm's `random` calls, replayed by kind.
struct ReplayedRandom {
  std::deque<double> randoms, uniforms, randints;
  static double next(std::deque<double>& q) {
    if (q.empty()) {
      ADD_FAILURE() << "runner drew more than timm";
      return 0.5;
    }
    const double v = q.front();
    q.pop_front();
    return v;
  }
  double uniform() { return next(randoms); }
  double uniform(double, double) { return next(uniforms); }
  int64_t randint(int64_t, int64_t) { return static_cast<int64_t>(next(randints)); }
};

TEST(ErasingParity, BoxesAndErasedImagesEqualTimmsWithTheSameDraws) {
  if (runner::test::recipe_refs_dir().empty())
    GTEST_SKIP() << "RUNNER_RECIPE_REFS is unset: run through ctest";
  std::ifstream in(runner::test::recipe_refs_dir() + "/manifest.json");
  ASSERT_TRUE(in) << "no manifest.json in " << runner::test::recipe_refs_dir();
  const auto cases = nlohmann::json::parse(in)["erasing"];
  ASSERT_EQ(cases.size(), 4u);
  int erased = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dump());
    const auto& o = c["options"];
    ErasingOptions options;
    options.p = o.value("probability", 0.5);
    options.min_area = o.value("min_area", 0.02);
    options.max_area = o.value("max_area", 1.0 / 3.0);
    options.min_aspect = o.value("min_aspect", 0.3);
    options.max_aspect = o.value("max_aspect", 1.0 / options.min_aspect);
    options.min_count = o.value("min_count", 1);
    options.max_count = o.value("max_count", options.min_count);
    const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() + "/" +
                                                   c["file"].get<std::string>());
    ReplayedRandom random{runner::test::recorded_draws(file.find("randoms")),
                          runner::test::recorded_draws(file.find("uniforms")),
                          runner::test::recorded_draws(file.find("randints"))};
    torch::Tensor x = file.find("x").clone();
    for (int64_t i = 0; i < x.size(0); ++i) {
      const auto boxes = runner::data::draw_erase_boxes(random, options, x.size(2), x.size(3));
      erased += !boxes.empty();
      for (const auto& b : boxes)
        x[i].slice(1, b.top, b.top + b.h).slice(2, b.left, b.left + b.w).zero_();
    }
    EXPECT_TRUE(random.randoms.empty() && random.uniforms.empty() && random.randints.empty())
        << "runner drew fewer numbers than timm";
    EXPECT_TRUE(x.equal(file.find("x_out")));
  }
  EXPECT_GT(erased, 40) << "the references should mostly erase";
}

TEST(ErasingStatistics, TheShareErasedAndTheBoxesFollowTheOptions) {
  ErasingOptions options;
  options.p = 0.4;
  options.max_count = 3;
  int erased = 0;
  const int images = 4000;
  for (int i = 0; i < images; ++i) {
    runner::data::Rng rng(9, 0, static_cast<uint64_t>(i));
    struct {
      runner::data::Rng& rng;
      double uniform() { return rng.uniform(); }
      double uniform(double a, double b) { return a + (b - a) * rng.uniform(); }
      int64_t randint(int64_t a, int64_t b) { return rng.uniform_int(a, b); }
    } random{rng};
    const auto boxes = runner::data::draw_erase_boxes(random, options, 40, 30);
    if (boxes.empty()) continue;
    ++erased;
    EXPECT_LE(boxes.size(), 3u);
    for (const auto& b : boxes) {
      EXPECT_GE(b.top, 0);
      EXPECT_LE(b.top + b.h, 40);
      EXPECT_LE(b.left + b.w, 30);
      // each box of about U(min_area, max_area) / count of the image, up to rounding
      EXPECT_LE(b.h * b.w, 1200.0 / 3.0 + 2 * (b.h + b.w) + 1);
    }
  }
  EXPECT_NEAR(erased / static_cast<double>(images), 0.4, 0.03);
}

}  // namespace
