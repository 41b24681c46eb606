#pragma once
// Inference over a split on every rank: the logits of each sample gathered in dataset order
// (gather_for_metrics), and the validation metrics computed from them.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "config/experiment_options.hpp"
#include "train/batch_source.hpp"
#include "train/run_parts.hpp"

namespace runner::train {

/// Validation results: metric name -> value ("loss" always present).
using MetricValues = std::map<std::string, double>;

/// One evaluation of the validation split.
struct Evaluation {
  MetricValues metrics;         ///< empty without a validation split
  torch::Tensor logits;         ///< float32 [N, C] on the CPU, dataset order
  std::vector<int64_t> labels;  ///< the split's labels, dataset order (multi-label: the first)
  /// task: multilabel: float32 [N, C] multi-hot, every label of each row's sample; undefined
  /// otherwise.
  torch::Tensor targets;
  std::vector<int64_t> indices;  ///< each row's sample (data.on_bad_image skip leaves some out)
  int64_t skipped = 0;           ///< samples data.on_bad_image skip left out of it
};

/// An inference pass's rows: each gathered logit row's dataset index beside it.
struct Predictions {
  torch::Tensor logits;          ///< float32 [N, C] on the CPU, dataset order
  std::vector<int64_t> indices;  ///< the dataset index of each row (all of them, but those
                                 ///< data.on_bad_image skip left out)
};

/// The test-time augmentation views each kind of pass averages (test_time_augmentation.hpp).
struct EvaluationViews {
  std::vector<config::TtaView> predict;   ///< predict.tta
  std::vector<config::TtaView> validate;  ///< predict.tta with train.eval_tta, else none
  bool multilabel = false;  ///< views average sigmoid probabilities (task: multilabel)
};

/// What `options`' predict.tta and train.eval_tta ask of each pass.
EvaluationViews evaluation_views(const config::ExperimentOptions& options);

class Evaluator {
 public:
  /// `batch_size`: per process (train.eval_batch_size); `log_every`: the progress cadence;
  /// `views`: test-time augmentation of predict() and evaluate().
  Evaluator(const RankContext& rank, const RunParts& parts, BatchSource& batches,
            int64_t batch_size, int64_t log_every, EvaluationViews views = {});

  /// The current weights' logits for every sample of `dataset` (float32 [N, C], CPU, dataset
  /// order, on every rank: a collective). Evaluates with rank 0's BatchNorm statistics, as the
  /// checkpoints hold them; leaves the model in training mode. `skip_bad_images`: leave out
  /// samples that cannot be read (their indices are missing from the result); else (and
  /// as data.on_bad_image says when not given) a sample any rank cannot read throws the same
  /// DataError on every rank, naming it. The logits average the predict views (predict.tta).
  Predictions predict(const std::shared_ptr<data::Dataset>& dataset,
                      std::optional<bool> skip_bad_images = std::nullopt);
  /// The validation metrics of the current weights (a collective), from logits averaged over
  /// the validate views; empty without a validation split.
  Evaluation evaluate();

  /// task: multilabel: logits are per-class yes/no scores (sigmoid), not a softmax.
  bool multilabel() const { return views_.multilabel; }

 private:
  Predictions infer(const std::shared_ptr<data::Dataset>& dataset,
                    std::optional<bool> skip_bad_images, const std::vector<config::TtaView>& views);

  RankContext rank_;
  const RunParts& parts_;
  BatchSource& batches_;
  int64_t batch_size_, log_every_;
  EvaluationViews views_;
};

}  // namespace runner::train
