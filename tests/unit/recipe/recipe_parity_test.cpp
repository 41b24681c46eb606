// train.mixup and train.ema against timm's own code (requirements.txt): timm's Mixup with the
// random numbers it drew replayed into runner's, and ModelEmaV3 over 20 steps of a model with
// BatchNorm. The references are made in the same ctest run by tests/timm/make_recipe_refs.py
// (fixture `recipe_refs`).

#include <cstdlib>
#include <deque>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "io/safetensors.hpp"
#include "recipe/recipe_refs.hpp"
#include "train/mixup.hpp"
#include "train/model_ema.hpp"

namespace {

using runner::train::MixPlan;
using runner::train::Mixup;

nlohmann::json manifest() {
  std::ifstream in(runner::test::recipe_refs_dir() + "/manifest.json");
  return in ? nlohmann::json::parse(in) : nlohmann::json();
}

#define REQUIRE_REFS()                                                                           \
  if (runner::test::recipe_refs_dir().empty())                                                   \
    GTEST_SKIP() << "RUNNER_RECIPE_REFS is unset: run through ctest, whose recipe_refs fixture " \
                    "makes the references with the real timm";                                   \
  ASSERT_TRUE(manifest().is_object()) << "no manifest.json in " << runner::test::recipe_refs_dir()

// timm's recorded draws, handed out in the order runner asks for them; a draw of the wrong kind
// or one too many fails the test.
class ReplayRandom final : public runner::train::MixRandom {
 public:
  explicit ReplayRandom(const runner::io::TensorFile& file) {
    uniforms_ = runner::test::recorded_draws(file.find("uniforms"));
    betas_ = runner::test::recorded_draws(file.find("betas"));
    randints_ = runner::test::recorded_draws(file.find("randints"));
  }
  double uniform() override { return next(uniforms_, "uniform"); }
  double beta(double) override { return next(betas_, "beta"); }
  int64_t randint(int64_t low, int64_t high) override {
    const auto v = static_cast<int64_t>(next(randints_, "randint"));
    EXPECT_TRUE(v >= low && v < high)
        << "timm's randint " << v << " outside runner's [" << low << ", " << high << ")";
    return v;
  }
  bool all_used() const { return uniforms_.empty() && betas_.empty() && randints_.empty(); }

 private:
  double next(std::deque<double>& q, const char* kind) {
    if (q.empty()) {
      ADD_FAILURE() << "runner drew one " << kind << " more than timm";
      return 0.5;
    }
    const double v = q.front();
    q.pop_front();
    return v;
  }
  std::deque<double> uniforms_, betas_, randints_;
};

runner::config::MixupOptions mixup_options(const nlohmann::json& o) {
  runner::config::MixupOptions m;
  m.mixup_alpha = o.value("mixup_alpha", 0.0);
  m.cutmix_alpha = o.value("cutmix_alpha", 0.0);
  if (o.contains("cutmix_minmax"))
    m.cutmix_minmax =
        std::make_pair(o["cutmix_minmax"][0].get<double>(), o["cutmix_minmax"][1].get<double>());
  m.prob = o.value("prob", 1.0);
  m.switch_prob = o.value("switch_prob", 0.5);
  m.mode = o.value("mode", "batch");
  m.label_smoothing = o.value("label_smoothing", 0.0);
  m.correct_lam = o.value("correct_lam", true);
  return m;
}

TEST(RecipeParity, MixupAndCutmixEqualTimmsWithTheSameDraws) {
  REQUIRE_REFS();
  const auto cases = manifest()["mixup"];
  ASSERT_GE(cases.size(), 18u);
  int mixed = 0, cut = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dump());
    const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() + "/" +
                                                   c["file"].get<std::string>());
    const torch::Tensor x = file.find("x"), target = file.find("target");
    ReplayRandom random(file);
    const Mixup mixup(mixup_options(c["options"]), 10);
    const MixPlan plan = mixup.draw(random, x.size(0), x.size(2), x.size(3), true);
    EXPECT_TRUE(random.all_used()) << "runner drew fewer numbers than timm";
    const auto [images, targets] = mixup.apply(plan, x, target);
    EXPECT_LE((images - file.find("x_out")).abs().max().item<double>(), 1e-6);
    EXPECT_LE((targets - file.find("target_out")).abs().max().item<double>(), 1e-6);
    EXPECT_TRUE(x.equal(file.find("x"))) << "apply changed its input";
    mixed += plan.mixes();
    cut += plan.per_batch ? plan.batch_cutmix : !plan.box_yl.empty();
  }
  EXPECT_GT(mixed, 12) << "the references should mostly mix";
  EXPECT_GT(cut, 6) << "the references should include cutmix";
}

TEST(RecipeParity, ModelEmaEqualsTimmsModelEmaV3After20Steps) {
  REQUIRE_REFS();
  const auto cases = manifest()["ema"];
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dump());
    const auto& o = c["options"];
    runner::config::EmaOptions options;
    options.enabled = true;
    options.decay = o["decay"];
    options.warmup = o.value("warmup", false);
    options.warmup_gamma = o.value("warmup_gamma", 1.0);
    options.warmup_power = o.value("warmup_power", 2.0 / 3.0);
    options.min_decay = o.value("min_decay", 0.0);
    options.update_after_step = o.value("update_after_step", 0);
    options.exclude_buffers = o.value("exclude_buffers", false);
    const auto file = runner::io::read_safetensors(runner::test::recipe_refs_dir() + "/" +
                                                   c["file"].get<std::string>());
    torch::nn::Sequential model(torch::nn::Linear(6, 5), torch::nn::BatchNorm1d(5),
                                torch::nn::Linear(5, 3));
    const auto load_step = [&](const std::string& prefix) {
      torch::NoGradGuard no_grad;
      for (auto& p : model->named_parameters()) p.value().copy_(file.find(prefix + p.key()));
      for (auto& b : model->named_buffers()) b.value().copy_(file.find(prefix + b.key()));
    };
    load_step("step1.");  // the average starts from any state: the first update copies
    runner::train::ModelEma ema(*model, options);
    for (int step = 1; step <= 20; ++step) {
      load_step("step" + std::to_string(step) + ".");
      ema.update(*model);
    }
    EXPECT_EQ(ema.updates(), 20);
    runner::train::EmaWeightsInModel averaged(&ema, *model);
    for (const auto& p : model->named_parameters())
      EXPECT_LE((p.value() - file.find("ema." + p.key())).abs().max().item<double>(), 1e-6)
          << p.key();
    for (const auto& b : model->named_buffers())
      EXPECT_LE((b.value().to(torch::kDouble) - file.find("ema." + b.key()).to(torch::kDouble))
                    .abs()
                    .max()
                    .item<double>(),
                1e-6)
          << b.key();
  }
}

}  // namespace
