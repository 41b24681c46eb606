// `none`: the optimizer's lr throughout (after the optional warmup).

#include "schedulers/schedulers.hpp"

namespace runner::optim {

namespace {

class ConstantScheduler final : public WarmupScheduler {
 public:
  ConstantScheduler(const nlohmann::json& params, const optim::ScheduleContext& context)
      : WarmupScheduler(params, context), base_lr_(context.base_lr) {}

 protected:
  double lr_after(int64_t) const override { return base_lr_; }

 private:
  double base_lr_;
};

}  // namespace

void add_none_scheduler(Registry<SchedulerFactory>& registry) {
  registry.add(
      "none",
      [](const nlohmann::json& params, const optim::ScheduleContext& context) {
        return std::make_unique<ConstantScheduler>(params, context);
      },
      schemas::scheduler(nlohmann::json::object()),
      "constant lr (optimizer.lr), after an optional linear warmup");
}

}  // namespace runner::optim
