// The schedulers' lr against hand-computed values and torch 1.13's lr_scheduler.

#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "plugin_params.hpp"
#include "runner/error.hpp"
#include "runner/optim/scheduler.hpp"
#include "runner/registries.hpp"

namespace {

using runner::optim::ScheduleContext;

std::unique_ptr<runner::optim::Scheduler> make(const std::string& name, nlohmann::json user,
                                               ScheduleContext context) {
  const auto& entry = runner::registries().schedulers.at(name);
  return entry.factory(runner::test::with_defaults(entry.schema, std::move(user)), context);
}

ScheduleContext context(double lr, int64_t total, int64_t per_epoch = 10) {
  ScheduleContext c;
  c.base_lr = lr;
  c.total_steps = total;
  c.steps_per_epoch = per_epoch;
  return c;
}

TEST(Scheduler, NoneKeepsTheOptimizerLr) {
  auto s = make("none", {}, context(0.05, 100));
  for (int64_t step : {0, 1, 50, 99, 500}) EXPECT_DOUBLE_EQ(s->lr_at(step), 0.05);
}

TEST(Scheduler, WarmupRisesLinearlyFromTheStartFactor) {
  auto s = make("none", {{"warmup_steps", 4}, {"warmup_start_factor", 0.2}}, context(1.0, 100));
  // lr = 1.0 * (0.2 + 0.8 * k / 4)
  EXPECT_DOUBLE_EQ(s->lr_at(0), 0.2);
  EXPECT_DOUBLE_EQ(s->lr_at(1), 0.4);
  EXPECT_DOUBLE_EQ(s->lr_at(3), 0.8);
  EXPECT_DOUBLE_EQ(s->lr_at(4), 1.0);
  EXPECT_DOUBLE_EQ(s->lr_at(90), 1.0);
}

TEST(Scheduler, StepCountsEpochsByDefault) {
  // 10 optimizer steps per epoch, decay by 0.5 every 2 epochs = every 20 steps.
  auto s = make("step", {{"step_size", 2}, {"gamma", 0.5}}, context(0.8, 100, 10));
  EXPECT_DOUBLE_EQ(s->lr_at(0), 0.8);
  EXPECT_DOUBLE_EQ(s->lr_at(19), 0.8);
  EXPECT_DOUBLE_EQ(s->lr_at(20), 0.4);
  EXPECT_DOUBLE_EQ(s->lr_at(45), 0.2);
}

TEST(Scheduler, StepInStepsMatchesTorchStepLR) {
  // torch 1.13: StepLR(SGD(lr=0.1), step_size=30, gamma=0.5), lr read before each
  // opt.step(); sched.step() (script: see the onecycle test below).
  auto s = make("step", {{"step_size", 30}, {"gamma", 0.5}, {"unit", "step"}}, context(0.1, 100));
  const std::pair<int64_t, double> expected[] = {{0, 0.1},   {29, 0.1},   {30, 0.05},
                                                 {59, 0.05}, {60, 0.025}, {99, 0.0125}};
  for (auto [step, lr] : expected) EXPECT_NEAR(s->lr_at(step), lr, 1e-15) << "step " << step;
}

TEST(Scheduler, CosineMatchesTheClosedFormAndTorch) {
  auto s = make("cosine", {{"min_lr", 0.001}}, context(0.1, 100));
  // Closed form eta_min + (lr - eta_min) * (1 + cos(pi t / T)) / 2 by hand:
  EXPECT_DOUBLE_EQ(s->lr_at(0), 0.1);
  EXPECT_NEAR(s->lr_at(50), 0.001 + 0.099 * 0.5, 1e-15);
  EXPECT_NEAR(s->lr_at(100), 0.001, 1e-15);
  EXPECT_NEAR(s->lr_at(1000), 0.001, 1e-15);  // past the end: stays at min_lr
  // torch CosineAnnealingLR(T_max=100, eta_min=0.001) (recursive form, hence the tolerance).
  const std::pair<int64_t, double> expected[] = {{1, 0.09997557473810371},
                                                 {25, 0.08550178566873408},
                                                 {50, 0.050499999999999975},
                                                 {99, 0.0010244252618962857}};
  for (auto [step, lr] : expected) EXPECT_NEAR(s->lr_at(step), lr, 1e-12) << "step " << step;
}

TEST(Scheduler, WarmupThenCosineMatchesTorchSequentialLR) {
  // torch: SequentialLR([LinearLR(start_factor=0.1, total_iters=10),
  // CosineAnnealingLR(T_max=90)], milestones=[10]) on SGD(lr=0.1).
  auto s = make("cosine", {{"warmup_steps", 10}, {"warmup_start_factor", 0.1}}, context(0.1, 100));
  const std::pair<int64_t, double> expected[] = {{0, 0.010000000000000002},
                                                 {1, 0.019000000000000003},
                                                 {5, 0.055000000000000014},
                                                 {9, 0.09100000000000004},
                                                 {10, 0.1},
                                                 {11, 0.0999695413509548},
                                                 {55, 0.049999999999999996},
                                                 {99, 3.045864904521188e-05}};
  for (auto [step, lr] : expected) EXPECT_NEAR(s->lr_at(step), lr, 1e-12) << "step " << step;
}

// Expected values from Debian's torch 1.13 (/usr/bin/python3), lr read before each step:
//   import torch
//   from torch.optim.lr_scheduler import OneCycleLR
//   def run(make, steps, lr=0.1):
//       p = torch.nn.Parameter(torch.zeros(1)); opt = torch.optim.SGD([p], lr=lr, momentum=0.9)
//       s = make(opt); out = []
//       for _ in range(steps):
//           out.append(opt.param_groups[0]["lr"]); opt.step(); s.step()
//       return out
//   oc = run(lambda o: OneCycleLR(o, max_lr=0.1, total_steps=100, cycle_momentum=False), 100)
//   oc3 = run(lambda o: OneCycleLR(o, max_lr=0.2, total_steps=50, pct_start=0.25,
//             div_factor=10.0, final_div_factor=100.0, three_phase=True,
//             anneal_strategy="linear", cycle_momentum=False), 50)
//   print([oc[i] for i in [0, 1, 15, 29, 30, 31, 60, 99]])
//   print([oc3[i] for i in [0, 5, 11, 12, 20, 23, 24, 30, 49]])
TEST(Scheduler, OneCycleMatchesTorchOneCycleLR) {
  auto s = make("onecycle", {}, context(0.1, 100));
  const std::pair<int64_t, double> expected[] = {
      {0, 0.0040000000000000036}, {1, 0.004281378056590748},
      {15, 0.05459866761210004},  {29, 0.1},
      {30, 0.09994965352845243},  {31, 0.09979871550490317},
      {60, 0.05892800902855288},  {99, 4e-07}};
  for (auto [step, lr] : expected) EXPECT_NEAR(s->lr_at(step), lr, 1e-15) << "step " << step;
  EXPECT_NEAR(s->lr_at(150), 4e-07, 1e-15);  // past the end: the final lr
}

TEST(Scheduler, OneCycleThreePhaseLinearMatchesTorch) {
  // max_lr_factor 2 on lr 0.1 gives torch's max_lr=0.2.
  auto s = make("onecycle",
                {{"max_lr_factor", 2.0},
                 {"pct_start", 0.25},
                 {"div_factor", 10.0},
                 {"final_div_factor", 100.0},
                 {"three_phase", true},
                 {"anneal_strategy", "linear"}},
                context(0.1, 50));
  const std::pair<int64_t, double> expected[] = {{0, 0.02},
                                                 {5, 0.0982608695652174},
                                                 {11, 0.19217391304347828},
                                                 {12, 0.19217391304347828},
                                                 {20, 0.06695652173913044},
                                                 {23, 0.01999999999999999},
                                                 {24, 0.019238461538461538},
                                                 {30, 0.01466923076923077},
                                                 {49, 0.0001999999999999988}};
  for (auto [step, lr] : expected) EXPECT_NEAR(s->lr_at(step), lr, 1e-15) << "step " << step;
}

TEST(Scheduler, AWarmupLongerThanTheRunIsClippedAndSaysSo) {
  // Users shorten runs (data.limit, epochs): the warmup leaves the schedule one step, and the
  // plugin says what it changed (the engine logs it once).
  for (const char* name : {"none", "step", "cosine", "onecycle"}) {
    auto s = make(name, {{"warmup_steps", 200}}, context(0.1, 100));
    EXPECT_EQ(s->adjustment(),
              "scheduler.warmup_steps 200 is not shorter than this run's 100 optimizer steps: "
              "clipped to 99")
        << name;
    EXPECT_EQ(make(name, {{"warmup_steps", 10}}, context(0.1, 100))->adjustment(), "") << name;
  }
  auto constant = make("none", {{"warmup_steps", 200}}, context(0.1, 100));
  EXPECT_LT(constant->lr_at(98), 0.1) << "still warming up";
  EXPECT_DOUBLE_EQ(constant->lr_at(99), 0.1) << "the last step runs the schedule itself";
  EXPECT_THROW(make("cosine", {{"warmup_steps", 5}}, context(0.1, 0)), runner::ConfigError)
      << "a run without a step has no schedule";
}

TEST(Scheduler, EveryBuiltinIsAPureFunctionOfTheStep) {
  // Resuming needs only the step count: two instances agree, and asking again changes nothing.
  for (const auto& name : {"none", "step", "cosine", "onecycle"}) {
    auto a = make(name, {{"warmup_steps", 3}}, context(0.1, 40, 8));
    auto b = make(name, {{"warmup_steps", 3}}, context(0.1, 40, 8));
    for (int64_t step = 39; step >= 0; --step) {
      const double lr = a->lr_at(step);
      EXPECT_TRUE(std::isfinite(lr) && lr >= 0) << name << " step " << step;
      EXPECT_EQ(lr, b->lr_at(step)) << name;
      EXPECT_EQ(lr, a->lr_at(step)) << name;
    }
  }
}

}  // namespace
