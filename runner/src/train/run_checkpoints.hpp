#pragma once
// The training loop's checkpoints in the run folder (checkpoints/last.pt, best.pt): what goes
// into them, what a resume takes back out, and the line a run ends on when it fails with its
// work saved. Every rank calls each of these: the main process writes, every rank reads.

#include <cstdint>
#include <optional>
#include <string>

#include "train/model_ema.hpp"
#include "train/run_parts.hpp"
#include "train/training_position.hpp"

namespace runner::train {

/// What last.pt gives back to a resumed loop besides the weights and optimizer state it loaded.
struct ResumedCheckpoint {
  CheckpointState state;
  /// train.ema's updates; nullopt where last.pt holds no average (the average starts over).
  std::optional<int64_t> ema_updates;
};

class RunCheckpoints {
 public:
  /// `dir`: the run folder's checkpoints/.
  RunCheckpoints(const RankContext& rank, RunParts& parts, std::string dir);

  /// Writes `name`.pt: the model, the optimizer's state when `with_optimizer`, `state` and
  /// train.ema's average (`ema`, null when off). Every rank throws the same Error when it
  /// cannot be written.
  void save(const std::string& name, bool with_optimizer, const CheckpointState& state,
            ModelEma* ema);
  /// last.pt into the model, the optimizer and `ema` (null when off), this rank's random stream
  /// restored; throws ConfigError when the world size is not the one that wrote it.
  ResumedCheckpoint resume(ModelEma* ema);
  /// best.pt's weights (train.ema's average where `averaged`) into the model, once the main
  /// process has written it.
  void load_best(bool averaged);

  /// The line of a run stopped by `failure` in `what` ("a training batch"), last.pt saved at
  /// `at`: where it stood and the command that continues it.
  std::string failure_line(const std::string& what, const std::string& failure,
                           const TrainingPosition& at, int64_t num_batches) const;

 private:
  std::string path(const std::string& name) const;

  RankContext rank_;
  RunParts& parts_;
  std::string dir_;
};

}  // namespace runner::train
