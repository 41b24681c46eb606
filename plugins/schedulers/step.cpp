// `step`: torch's StepLR, lr = lr * gamma^floor(steps / step_size), counted in epochs or steps.

#include <cmath>
#include <string>

#include "runner/error.hpp"
#include "schedulers/schedulers.hpp"

namespace runner::optim {

namespace {

class StepScheduler final : public WarmupScheduler {
 public:
  StepScheduler(const nlohmann::json& params, const optim::ScheduleContext& context, int64_t period,
                double gamma)
      : WarmupScheduler(params, context),
        base_lr_(context.base_lr),
        period_(period),
        gamma_(gamma) {}

 protected:
  double lr_after(int64_t step) const override {
    return base_lr_ * std::pow(gamma_, static_cast<double>(step / period_));
  }

 private:
  double base_lr_;
  int64_t period_;  // optimizer steps between decays
  double gamma_;
};

}  // namespace

void add_step_scheduler(Registry<SchedulerFactory>& registry) {
  nlohmann::json properties = {
      {"step_size",
       {{"type", "integer"},
        {"minimum", 1},
        {"default", 1},
        {"description",
         "Decay period, in `unit`s: lr = optimizer.lr * gamma^floor(n / step_size), n counting "
         "epochs (optimizer steps after warmup / steps per epoch) or optimizer steps after "
         "warmup."}}},
      {"unit",
       {{"type", "string"},
        {"enum", {"epoch", "step"}},
        {"default", "epoch"},
        {"description",
         "What step_size counts: 'epoch' (as torch StepLR stepped once per epoch) or 'step' "
         "(optimizer steps, i.e. after gradient accumulation)."}}},
      {"gamma",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"default", 0.1},
        {"description", "Factor applied to the lr at every decay."}}}};
  registry.add(
      "step",
      [](const nlohmann::json& params, const optim::ScheduleContext& context) {
        int64_t period = params.at("step_size").get<int64_t>();
        if (params.at("unit").get<std::string>() == "epoch") {
          if (context.steps_per_epoch < 1)
            throw ConfigError(
                "scheduler.step: unit 'epoch' needs at least one optimizer step per epoch; "
                "use unit: step");
          period *= context.steps_per_epoch;
        }
        return std::make_unique<StepScheduler>(params, context, period,
                                               params.at("gamma").get<double>());
      },
      schemas::scheduler(properties), "lr times gamma every step_size epochs or steps (StepLR)");
}

}  // namespace runner::optim
