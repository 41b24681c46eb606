#pragma once
// What the run report shows of the best epoch: the confusion matrix with per-class precision,
// recall and F1 (a "best" record of metrics.jsonl), and the validation images the model got
// most confidently wrong (best_examples.json, PNG data).

#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "runner/data/dataset.hpp"

namespace runner::output {

/// {"confusion_matrix": [[...]] (rows: true class, columns: predicted), "classes": [...],
/// "per_class": [{"class", "precision", "recall", "f1", "support"}]} for logits [N, C] and
/// labels in [0, C). Labels outside that range (unlabelled samples) are left out.
nlohmann::json confusion_summary(const torch::Tensor& logits, const std::vector<int64_t>& labels,
                                 const std::vector<std::string>& class_names);

/// task: multilabel: {"classes": [...], "per_class": [{"class", "precision", "recall", "f1",
/// "support", "ap"}], "threshold": 0.5} for logits [N, C] against multi-hot `targets` [N, C]: a
/// class predicted where its sigmoid probability is at least 0.5; ap its average precision.
nlohmann::json multilabel_summary(const torch::Tensor& logits, const torch::Tensor& targets,
                                  const std::vector<std::string>& class_names);

/// The `count` misclassified samples with the highest softmax confidence, most confident first:
/// [{"index", "true", "predicted", "confidence", "png" (base64 of the untransformed image),
/// "file" (where the dataset reads files)}].
/// `indices`: each row's dataset index (empty: row i is sample i).
nlohmann::json confident_mistakes(const torch::Tensor& logits, const std::vector<int64_t>& labels,
                                  const data::Dataset& dataset,
                                  const std::vector<std::string>& class_names, size_t count,
                                  const std::vector<int64_t>& indices = {});

}  // namespace runner::output
