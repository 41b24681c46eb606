// `onecycle`: torch's OneCycleLR (lr only; momentum is not cycled), peak = optimizer.lr *
// max_lr_factor.

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "schedulers/schedulers.hpp"

namespace runner::optim {

namespace {

struct Phase {
  double end_step;  // torch's phase['end_step']
  double start_lr, end_lr;
};

class OneCycleScheduler final : public WarmupScheduler {
 public:
  OneCycleScheduler(const nlohmann::json& params, const optim::ScheduleContext& context,
                    double max_lr, int64_t steps)
      : WarmupScheduler(params, context),
        steps_(steps),
        cosine_(params.at("anneal_strategy").get<std::string>() == "cos") {
    const double pct_start = params.at("pct_start").get<double>();
    const double initial_lr = max_lr / params.at("div_factor").get<double>();
    const double min_lr = initial_lr / params.at("final_div_factor").get<double>();
    const double total = static_cast<double>(steps);
    // The phase boundaries exactly as torch 1.13 computes them (float arithmetic included).
    if (params.at("three_phase").get<bool>()) {
      phases_ = {{pct_start * total - 1, initial_lr, max_lr},
                 {2 * pct_start * total - 2, max_lr, initial_lr},
                 {total - 1, initial_lr, min_lr}};
    } else {
      phases_ = {{pct_start * total - 1, initial_lr, max_lr}, {total - 1, max_lr, min_lr}};
    }
  }

 protected:
  double lr_after(int64_t step) const override {
    const double n = static_cast<double>(std::min(step, steps_ - 1));
    double start_step = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (n <= phase.end_step || i + 1 == phases_.size()) {
        const double span = phase.end_step - start_step;
        const double pct = span > 0 ? (n - start_step) / span : 1.0;
        return anneal(phase.start_lr, phase.end_lr, pct);
      }
      start_step = phase.end_step;
    }
    return phases_.back().end_lr;
  }

 private:
  double anneal(double start, double end, double pct) const {
    if (cosine_) return end + (start - end) / 2.0 * (std::cos(M_PI * pct) + 1);
    return (end - start) * pct + start;
  }

  int64_t steps_;
  bool cosine_;
  std::vector<Phase> phases_;
};

}  // namespace

void add_onecycle_scheduler(Registry<SchedulerFactory>& registry) {
  nlohmann::json properties = {
      {"max_lr_factor",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"default", 1.0},
        {"description",
         "Peak lr as a multiple of optimizer.lr: torch's max_lr = optimizer.lr * "
         "max_lr_factor."}}},
      {"pct_start",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"exclusiveMaximum", 1},
        {"default", 0.3},
        {"description",
         "Share of the steps (after warmup) spent rising from max_lr / div_factor to max_lr."}}},
      {"div_factor",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"default", 25.0},
        {"description", "Initial lr = max_lr / div_factor."}}},
      {"final_div_factor",
       {{"type", "number"},
        {"exclusiveMinimum", 0},
        {"default", 1e4},
        {"description", "Final lr = initial lr / final_div_factor."}}},
      {"anneal_strategy",
       {{"type", "string"},
        {"enum", {"cos", "linear"}},
        {"default", "cos"},
        {"description",
         "'cos': lr = end + (start - end) / 2 * (1 + cos(pi * pct)) inside each phase; "
         "'linear': start + (end - start) * pct."}}},
      {"three_phase",
       {{"type", "boolean"},
        {"default", false},
        {"description",
         "torch's three_phase: rise, fall back to the initial lr symmetrically, then anneal to "
         "the final lr."}}}};
  registry.add(
      "onecycle",
      [](const nlohmann::json& params, const optim::ScheduleContext& context) {
        const int64_t steps = steps_after_warmup("onecycle", params, context);
        const double max_lr = context.base_lr * params.at("max_lr_factor").get<double>();
        return std::make_unique<OneCycleScheduler>(params, context, max_lr, steps);
      },
      schemas::scheduler(properties),
      "one-cycle policy: rise to the peak lr, then anneal far below (OneCycleLR)");
}

}  // namespace runner::optim
