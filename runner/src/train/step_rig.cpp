#include "train/step_rig.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "config/shared_memory_rules.hpp"
#include "dist/sync_batch_norm.hpp"
#include "dist/world.hpp"
#include "runner/error.hpp"
#include "runner/optim/sharded_step.hpp"

namespace runner::train {

std::vector<double> schedule_lrs(const RunParts& parts, int64_t steps_per_epoch,
                                 int64_t total_steps, bool main) {
  optim::ScheduleContext context;
  // The lr the optimizer plugin was built with (its first group's): the core reads no plugin
  // parameter, so an optimizer whose parameters name no `lr` works too.
  context.base_lr = optim::first_group_lr(parts.optimizer->torch_optimizer());
  context.steps_per_epoch = steps_per_epoch;
  context.total_steps = total_steps;
  const auto scheduler = parts.make_scheduler(context);
  if (const std::string note = scheduler->adjustment(); !note.empty() && main)
    spdlog::warn("{}", note);
  std::vector<double> lrs(static_cast<size_t>(context.total_steps) + 1);
  for (size_t k = 0; k < lrs.size(); ++k) lrs[k] = scheduler->lr_at(static_cast<int64_t>(k));
  return lrs;
}

std::string schedule_change_note(const RunParts& parts, int64_t steps_per_epoch, int64_t from_steps,
                                 int64_t to_steps, int64_t at_step) {
  const auto before = schedule_lrs(parts, steps_per_epoch, from_steps, false);
  const auto now = schedule_lrs(parts, steps_per_epoch, to_steps, false);
  const auto at = [at_step](const std::vector<double>& lrs) {
    return lrs[static_cast<size_t>(
        std::min<int64_t>(at_step, static_cast<int64_t>(lrs.size()) - 1))];
  };
  return fmt::format(
      "the resumed run has {} optimizer steps, the run before had {} (train.epochs): the {} "
      "schedule spans the new length, so the lr at step {} is {:.4g} where it would have been "
      "{:.4g}",
      to_steps, from_steps, parts.about.scheduler, at_step, at(now), at(before));
}

StepRig::StepRig(const RankContext& rank, std::shared_ptr<models::Model> model,
                 optim::Optimizer& optimizer, losses::Loss& loss, const StepRigOptions& options)
    : rank_(rank) {
  if (options.gradient_sync) {
    const config::GradientSyncOptions& sync = *options.gradient_sync;
    dist::DataParallelOptions dp;
    dp.bucket_cap_mb = sync.bucket_cap_mb;
    dp.find_unused_parameters = sync.find_unused_parameters;
    dp.grad_comm = sync.grad_comm;
    dp.grad_transport = sync.grad_transport;
    dp.broadcast_buffers = sync.bn_sync == "broadcast";
    // Attached before DataParallel so that the first training forward already synchronises.
    if (sync.bn_sync == "sync") {
      const int layers = dist::convert_sync_batchnorm(*model, rank.world);
      if (rank.world->is_main())
        spdlog::info("SyncBatchNorm: {} BatchNorm layer(s) take statistics over the global batch",
                     layers);
    }
    // train.shard_optimizer: each rank steps its share (runner/optim/sharded_step.hpp) where
    // `runner validate`'s rule allows it with what this rank runs; DataParallel adds what only
    // it finds out (/dev/shm's room, float32 parameters).
    auto* sharded = dynamic_cast<optim::ShardedStep*>(&optimizer);
    config::SharedMemoryFacts facts;
    facts.cpu_ranks = rank.device.is_cpu();
    facts.nodes = rank.world->world_size() / std::max(1, rank.world->local_world_size());
    facts.grad_transport = sync.grad_transport;
    facts.grad_comm = sync.grad_comm;
    facts.precision = rank.precision;
    facts.optimizer_steps_shares = sharded != nullptr;
    facts.clip_grad_norm = options.clip_grad_norm.has_value();
    facts.ema = options.ema;
    const std::string why_replicated = config::why_not_sharded(facts);
    if (sync.shard_optimizer != "off" && why_replicated.empty())
      dp.shard_state_slots = sharded->state_slots();
    data_parallel_ = std::make_unique<dist::DataParallel>(
        rank.world, std::static_pointer_cast<torch::nn::Module>(model), dp);
    if (data_parallel_->shards() != nullptr) {
      sharded->step_shards(data_parallel_->shards());
    } else if (sync.shard_optimizer == "on" && rank.world->distributed()) {
      throw ConfigError(
          "train.shard_optimizer: on cannot be used here: " +
          (why_replicated.empty() ? data_parallel_->why_not_sharded() : why_replicated) +
          " (use auto or off)");
    }
  }
  GradScalerOptions scaling;
  scaling.enabled = rank.precision == config::Precision::kFp16;
  // No all-reduce of its found-inf flag: DataParallel averaged the gradients, so an inf on any
  // rank is an inf on every rank, and every rank skips the same steps.
  scaler_ = std::make_unique<GradScaler>(scaling);
  schedule_ = std::make_unique<DeviceSchedule>(options.lrs, rank.device);
  TrainStepParts step;
  step.model = model.get();
  step.optimizer = &optimizer;
  step.schedule = schedule_.get();
  step.loss = &loss;
  step.scaler = scaler_.get();
  step.data_parallel = data_parallel_.get();
  step.precision = rank.precision;
  step.device = rank.device;
  step.clip_grad_norm = options.clip_grad_norm;
  step_ = std::make_unique<TrainStep>(step);
}

StepRig::~StepRig() = default;

WindowReading StepRig::read_window() {
  const WindowSums w = step_->take_window();
  torch::Tensor sums = torch::stack({w.loss, w.finite, w.nonfinite});
  torch::Tensor runs = torch::stack({w.longest_nonfinite_run, step_->nonfinite_run()});
  if (data_parallel_ && rank_.world->distributed()) {
    rank_.world->all_reduce_(sums, dist::ReduceOp::kSum);
    rank_.world->all_reduce_(runs, dist::ReduceOp::kMax);
  }
  const auto as_double = [&](const torch::Tensor& t) {
    return t.to(rank_.device, torch::kDouble).reshape({-1});
  };
  // The window's one host read.
  const torch::Tensor values =
      torch::cat({as_double(sums), as_double(runs), as_double(schedule_->steps_taken()),
                  as_double(schedule_->lr()), as_double(scaler_->scale_tensor())})
          .to(torch::kCPU);
  const auto v = values.accessor<double, 1>();
  WindowReading reading;
  reading.loss_sum = v[0];
  reading.finite = v[1];
  reading.nonfinite = v[2];
  reading.longest_nonfinite_run = static_cast<int64_t>(std::llround(v[3]));
  reading.nonfinite_run = static_cast<int64_t>(std::llround(v[4]));
  reading.optimizer_steps = static_cast<int64_t>(std::llround(v[5]));
  reading.lr = v[6];
  reading.scale = v[7];
  return reading;
}

}  // namespace runner::train
