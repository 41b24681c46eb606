#pragma once
// A split's predictions as a file: Kaggle's submission format (ImageId,Label) or a CSV of the
// class probabilities. Main process only.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace runner::output {

/// What a "csv" row names besides its index: the sample's file (by dataset index; empty, or
/// all "": no file column) and the class names (empty: no class column).
struct SampleNames {
  std::vector<std::string> files;
  std::vector<std::string> classes;
  /// task: multilabel: sigmoid probabilities, and the label and class columns list every class
  /// at or above 0.5 (space-separated) instead of the argmax.
  bool multilabel = false;
};

/// Writes the predictions of `logits` [N, C] (dataset order) to `path` atomically, in `format`:
/// "kaggle": ImageId,Label with the ids of the sample_submission.csv beside `data_file` when
/// there is one (the order Kaggle scores), else 1..N; "csv": index[,file],label[,class],
/// prob_0..prob_{C-1} (the file and class columns where `names` has them).
/// `indices`: each row's sample, ascending, of a split of `total_rows` samples (some left out
/// by data.on_bad_image skip); empty: row i is sample i. Returns the rows written. Throws
/// DataError when the sample submission's rows do not match.
size_t write_predictions(const torch::Tensor& logits, const std::string& format,
                         const std::string& data_file, const std::filesystem::path& path,
                         const std::vector<int64_t>& indices = {}, int64_t total_rows = -1,
                         const SampleNames& names = {});

/// Writes one row per file of `files` to `path` atomically: path,class,prob_<class>...,error
/// with the predicted class's name (`class_names`, else its index) and every class's
/// probability; `indices` says which file each row of `logits` is, and a file without a row
/// gets its `errors` entry (why it could not be read) and empty class and probabilities.
/// Returns the rows written (every file).
size_t write_file_predictions(const torch::Tensor& logits, const std::vector<int64_t>& indices,
                              const std::vector<std::string>& files,
                              const std::map<size_t, std::string>& errors,
                              const std::vector<std::string>& class_names,
                              const std::filesystem::path& path, bool multilabel = false);

}  // namespace runner::output
