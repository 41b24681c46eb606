#pragma once
// One real training step before any rank starts: what a run does with its first batch, on the
// CPU, on the run's own model (put back as it was) or, where the run's is on a GPU or not built
// yet, on a fresh one, so that a model that cannot take the images (a timm model
// built for 224 px given 32 px) or a loss that does not fit the logits (loss.weight's count) is
// one line at validate, --dry-run and run, not a traceback from every rank after they started.

#include "config/experiment.hpp"
#include "train/run_parts.hpp"

namespace runner::run {

/// Two training samples through data.train_transforms, the model's forward in training mode,
/// the loss and the backward (`training`), then one evaluation sample through
/// data.eval_transforms and an eval-mode forward. A model above kFullStepLimit parameters runs
/// the forwards only (no backward: its memory on the CPU is the run's, not the check's). The
/// run's random streams go on as if the check had not run. `parts.model`, where it is on the
/// CPU, is the model stepped, and its weights and buffers are put back afterwards: the model is
/// built once (run --dry-run, a rank that checks for itself). Throws ConfigError naming the key to
/// change (model.kwargs.img_size or the resize for a model of one input size).
/// `initial_weights`: model.init_from's or model.pretrained's weights go in first, as in the run
/// (false where a checkpoint replaces them: a resume, predict --checkpoint).
void check_one_step(const config::Experiment& e, const train::RunParts& parts, bool training,
                    bool initial_weights);

/// Parameters above which check_one_step leaves out the backward.
constexpr int64_t kFullStepLimit = 300'000'000;

}  // namespace runner::run
