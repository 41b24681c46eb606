#pragma once
// A split's predictions as a file: Kaggle's submission format (ImageId,Label) or a CSV of the
// class probabilities. Main process only.

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace runner::output {

/// Writes the predictions of `logits` [N, C] (dataset order) to `path` atomically, in `format`:
/// "kaggle": ImageId,Label with the ids of the sample_submission.csv beside `data_file` when
/// there is one (the order Kaggle scores), else 1..N; "csv": index,label,prob_0..prob_{C-1}.
/// Returns the rows written. Throws DataError when the sample submission's rows do not match.
size_t write_predictions(const torch::Tensor& logits, const std::string& format,
                         const std::string& data_file, const std::filesystem::path& path);

/// Writes one row per file of `files` (the rows of `logits`, same order) to `path` atomically:
/// path,class,prob_<class>... with the predicted class's name (`class_names`, else its index)
/// and every class's probability. Returns the rows written.
size_t write_file_predictions(const torch::Tensor& logits, const std::vector<std::string>& files,
                              const std::vector<std::string>& class_names,
                              const std::filesystem::path& path);

}  // namespace runner::output
