// `cosine`: torch's CosineAnnealingLR closed form over the whole run (after warmup).

#include <algorithm>
#include <cmath>

#include "schedulers/schedulers.hpp"

namespace runner::optim {

namespace {

class CosineScheduler final : public WarmupScheduler {
 public:
  CosineScheduler(const nlohmann::json& params, const optim::ScheduleContext& context,
                  double min_lr, int64_t steps)
      : WarmupScheduler(params, context),
        base_lr_(context.base_lr),
        min_lr_(min_lr),
        steps_(steps) {}

 protected:
  double lr_after(int64_t step) const override {
    const double t = static_cast<double>(std::min(step, steps_)) / static_cast<double>(steps_);
    return min_lr_ + (base_lr_ - min_lr_) * (1.0 + std::cos(M_PI * t)) / 2.0;
  }

 private:
  double base_lr_, min_lr_;
  int64_t steps_;  // T_max
};

}  // namespace

void add_cosine_scheduler(Registry<SchedulerFactory>& registry) {
  nlohmann::json properties = {
      {"min_lr",
       {{"type", "number"},
        {"minimum", 0},
        {"default", 0.0},
        {"description",
         "Final lr (torch's eta_min). At step n after warmup: lr = min_lr + (optimizer.lr - "
         "min_lr) * (1 + cos(pi * n / T)) / 2, T = total optimizer steps - warmup_steps; "
         "min_lr from step T on."}}}};
  registry.add(
      "cosine",
      [](const nlohmann::json& params, const optim::ScheduleContext& context) {
        return std::make_unique<CosineScheduler>(params, context, params.at("min_lr").get<double>(),
                                                 steps_after_warmup("cosine", params, context));
      },
      schemas::scheduler(properties),
      "cosine annealing from optimizer.lr to min_lr over the run (CosineAnnealingLR)");
}

}  // namespace runner::optim
