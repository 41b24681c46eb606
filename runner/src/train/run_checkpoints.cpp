#include "train/run_checkpoints.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "dist/world.hpp"
#include "train/checkpoint.hpp"

namespace runner::train {

RunCheckpoints::RunCheckpoints(const RankContext& rank, RunParts& parts, std::string dir)
    : rank_(rank), parts_(parts), dir_(std::move(dir)) {}

std::string RunCheckpoints::path(const std::string& name) const {
  return (std::filesystem::path(dir_) / (name + ".pt")).string();
}

void RunCheckpoints::save(const std::string& name, bool with_optimizer,
                          const CheckpointState& state, ModelEma* ema) {
  nlohmann::json meta = state.to_json();
  if (ema) meta["ema_updates"] = ema->updates();
  save_run_checkpoint(*rank_.world, path(name), *parts_.model,
                      with_optimizer ? parts_.optimizer.get() : nullptr, std::move(meta), ema);
}

ResumedCheckpoint RunCheckpoints::resume(ModelEma* ema) {
  const std::string last = path("last");
  const auto content =
      load_checkpoint(last, *parts_.model, parts_.optimizer.get(), CheckpointWeights::kModel, ema);
  ResumedCheckpoint resumed;
  resumed.state = CheckpointState::from_json(content.meta, last, rank_.world->world_size());
  if (content.ema_loaded) resumed.ema_updates = content.meta.value("ema_updates", int64_t{0});
  if (ema && !content.ema_loaded && rank_.world->is_main())
    spdlog::warn("{} holds no averaged weights: train.ema starts from the resumed weights", last);
  const int rank = rank_.world->rank();
  if (content.rng_states.defined() && content.rng_states.size(0) > rank)
    set_cpu_rng_state(content.rng_states[rank].clone());  // offset 0: 2.x reads from the start
  return resumed;
}

void RunCheckpoints::load_best(bool averaged) {
  rank_.world->barrier();
  load_checkpoint(path("best"), *parts_.model, nullptr,
                  averaged ? CheckpointWeights::kEma : CheckpointWeights::kModel);
}

std::string RunCheckpoints::failure_line(const std::string& what, const std::string& failure,
                                         const TrainingPosition& p, int64_t num_batches) const {
  const std::string run_dir = std::filesystem::path(dir_).parent_path().string();
  const std::string at = p.batches_done > 0 ? fmt::format("at epoch {}, batch {} of {}",
                                                          p.epoch + 1, p.batches_done, num_batches)
                         : p.epoch > 0      ? fmt::format("after epoch {}", p.epoch)
                                            : std::string("before the first step");
  return fmt::format(
      "{}, in {}; saved checkpoints/last.pt {} (optimizer step {}): runner run --resume {} "
      "continues from there",
      failure, what, at, p.optimizer_steps, run_dir);
}

}  // namespace runner::train
