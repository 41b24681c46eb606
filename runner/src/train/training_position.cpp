#include "train/training_position.hpp"

#include <cmath>

#include "runner/error.hpp"

namespace runner::train {

using nlohmann::json;

void LossTotals::add(const LossTotals& other) {
  sum += other.sum;
  finite += other.finite;
  nonfinite += other.nonfinite;
}

double LossTotals::mean() const { return finite > 0 ? sum / finite : NAN; }

json LossTotals::to_json() const {
  return {{"sum", sum}, {"finite", finite}, {"nonfinite", nonfinite}};
}

LossTotals LossTotals::from_json(const json& j) {
  if (!j.is_object()) return {};
  return {j.value("sum", 0.0), j.value("finite", 0.0), j.value("nonfinite", 0.0)};
}

void TrainingPosition::take(const WindowReading& reading, int64_t max_nonfinite_steps) {
  const LossTotals read{reading.loss_sum, reading.finite, reading.nonfinite};
  window.add(read);
  epoch_totals.add(read);
  nonfinite_run = reading.nonfinite_run;
  optimizer_steps = reading.optimizer_steps;
  lr = reading.lr;
  scale = reading.scale;
  attempted_at_read = steps_attempted;
  if (reading.longest_nonfinite_run >= max_nonfinite_steps)
    throw Error("the training loss was NaN or inf for " +
                std::to_string(reading.longest_nonfinite_run) + " consecutive steps (epoch " +
                std::to_string(epoch + 1) + ", by step " + std::to_string(steps_attempted) +
                "; checked at every metrics record): training diverged; lower optimizer.lr, set "
                "train.clip_grad_norm, or check the data (train.max_nonfinite_steps sets the "
                "patience)");
}

json TrainingPosition::to_json() const {
  return {{"epoch", epoch},
          {"batches_done", batches_done},
          {"optimizer_steps", optimizer_steps},
          {"steps_attempted", steps_attempted},
          {"nonfinite_streak", nonfinite_run},
          {"window_loss", window.to_json()},
          {"epoch_loss", epoch_totals.to_json()}};
}

TrainingPosition TrainingPosition::from_json(const json& meta) {
  TrainingPosition p;
  p.epoch = meta.at("epoch").get<int64_t>();
  p.batches_done = meta.at("batches_done").get<int64_t>();
  p.optimizer_steps = meta.at("optimizer_steps").get<int64_t>();
  // Checkpoints before the device-side step lack it: every step counted then.
  p.steps_attempted = p.attempted_at_read = meta.value("steps_attempted", p.optimizer_steps);
  p.last_logged_step = p.optimizer_steps;
  p.nonfinite_run = meta.at("nonfinite_streak").get<int64_t>();
  p.window = LossTotals::from_json(meta.value("window_loss", json()));
  p.epoch_totals = LossTotals::from_json(meta.value("epoch_loss", json()));
  return p;
}

json CheckpointState::to_json() const {
  json meta = position.to_json();
  meta.update(best);
  meta["scaler"] = {{"scale", scaler.scale}, {"growth_tracker", scaler.growth_tracker}};
  meta["world_size"] = world_size;
  meta["run_seconds"] = run_seconds;
  meta["schedule_steps"] = schedule_steps;
  return meta;
}

CheckpointState CheckpointState::from_json(const json& meta, const std::string& checkpoint,
                                           int world_size) {
  const int written_by = meta.value("world_size", 1);
  if (written_by != world_size)
    throw ConfigError("cannot resume '" + checkpoint + "' with " + std::to_string(world_size) +
                      " processes: it was written by " + std::to_string(written_by) +
                      " (the sampler's order depends on the world size); use "
                      "launch.num_processes=" +
                      std::to_string(written_by));
  CheckpointState state;
  state.position = TrainingPosition::from_json(meta);
  state.best = meta;
  state.scaler = {meta.at("scaler").at("scale").get<double>(),
                  meta.at("scaler").at("growth_tracker").get<int64_t>()};
  state.world_size = written_by;
  state.run_seconds = meta.value("run_seconds", 0.0);
  state.schedule_steps = meta.value("schedule_steps", int64_t{0});
  return state;
}

}  // namespace runner::train
