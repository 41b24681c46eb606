#include "output/predictions_writer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <vector>

#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::output {
namespace {

namespace fs = std::filesystem;

// Kaggle's ids: the first column of sample_submission.csv beside the test file when there is
// one (it names the order Kaggle scores), else 1..n as the digit-recognizer's.
std::vector<std::string> submission_ids(const std::string& test_file, int64_t rows) {
  std::vector<std::string> ids;
  std::error_code ec;
  const fs::path sample = fs::path(test_file).parent_path() / "sample_submission.csv";
  if (fs::is_regular_file(test_file, ec) && fs::is_regular_file(sample, ec)) {
    std::ifstream in(sample);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line))
      if (!line.empty() && line != "\r") ids.push_back(line.substr(0, line.find(',')));
    if (static_cast<int64_t>(ids.size()) != rows)
      throw DataError(sample.string() + " has " + std::to_string(ids.size()) +
                      " rows but the test split has " + std::to_string(rows) +
                      ": use the sample submission of this test file, or remove it");
    spdlog::info("submission ids from {}", sample.string());
    return ids;
  }
  for (int64_t i = 0; i < rows; ++i) ids.push_back(std::to_string(i + 1));
  return ids;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// The predicted classes of one row: the argmax, or (multi-label) every class at or above 0.5.
std::vector<int64_t> predicted_classes(const float* probabilities, int64_t classes,
                                       bool multilabel) {
  if (!multilabel)
    return {std::max_element(probabilities, probabilities + classes) - probabilities};
  std::vector<int64_t> out;
  for (int64_t c = 0; c < classes; ++c)
    if (probabilities[c] >= 0.5f) out.push_back(c);
  return out;
}

std::string joined(const std::vector<int64_t>& classes,
                   const std::function<std::string(int64_t)>& text) {
  std::string out;
  for (const int64_t c : classes) out += (out.empty() ? "" : " ") + text(c);
  return out;
}

}  // namespace

size_t write_predictions(const torch::Tensor& logits, const std::string& format,
                         const std::string& data_file, const std::filesystem::path& path,
                         const std::vector<int64_t>& indices, int64_t total_rows,
                         const SampleNames& names) {
  const auto labels = logits.argmax(1);
  const auto sample = [&](int64_t row) {
    return indices.empty() ? row : indices[static_cast<size_t>(row)];
  };
  std::string text;
  if (format == "kaggle") {
    const auto ids = submission_ids(data_file, total_rows >= 0 ? total_rows : logits.size(0));
    text = "ImageId,Label\n";
    for (int64_t i = 0; i < logits.size(0); ++i)
      text += ids[static_cast<size_t>(sample(i))] + "," +
              std::to_string(labels[i].item<int64_t>()) + "\n";
  } else {
    const auto probs = (names.multilabel ? torch::sigmoid(logits) : torch::softmax(logits, 1))
                           .to(torch::kFloat)
                           .contiguous();
    const bool files = std::any_of(names.files.begin(), names.files.end(),
                                   [](const std::string& f) { return !f.empty(); });
    const bool classes = !names.classes.empty();
    text = std::string("index") + (files ? ",file" : "") + ",label" + (classes ? ",class" : "");
    for (int64_t c = 0; c < logits.size(1); ++c) text += ",prob_" + std::to_string(c);
    text += "\n";
    auto p = probs.accessor<float, 2>();
    for (int64_t i = 0; i < logits.size(0); ++i) {
      const std::vector<int64_t> predicted = predicted_classes(
          probs.data_ptr<float>() + i * logits.size(1), logits.size(1), names.multilabel);
      text += std::to_string(sample(i));
      if (files) text += "," + csv_field(names.files.at(static_cast<size_t>(sample(i))));
      text += "," + joined(predicted, [](int64_t c) { return std::to_string(c); });
      if (classes)
        text += "," + csv_field(joined(predicted, [&](int64_t c) {
                  return c < static_cast<int64_t>(names.classes.size())
                             ? names.classes[static_cast<size_t>(c)]
                             : std::to_string(c);
                }));
      for (int64_t c = 0; c < logits.size(1); ++c) text += fmt::format(",{:.6g}", p[i][c]);
      text += "\n";
    }
  }
  util::write_file_atomically(path.string(), text);
  return static_cast<size_t>(logits.size(0));
}

size_t write_file_predictions(const torch::Tensor& logits, const std::vector<int64_t>& indices,
                              const std::vector<std::string>& files,
                              const std::map<size_t, std::string>& errors,
                              const std::vector<std::string>& class_names,
                              const std::filesystem::path& path, bool multilabel) {
  const auto name = [&](int64_t c) {
    return c < static_cast<int64_t>(class_names.size()) ? class_names[static_cast<size_t>(c)]
                                                        : std::to_string(c);
  };
  const int64_t classes = logits.size(0) > 0 ? logits.size(1) : 0;
  const torch::Tensor probs = logits.size(0) == 0 ? logits
                              : multilabel
                                  ? torch::sigmoid(logits).to(torch::kFloat).contiguous()
                                  : torch::softmax(logits, 1).to(torch::kFloat).contiguous();
  std::vector<int64_t> row_of(files.size(), -1);
  for (size_t r = 0; r < indices.size(); ++r) row_of.at(static_cast<size_t>(indices[r])) = r;
  std::string text = "path,class";
  for (int64_t c = 0; c < classes; ++c) text += "," + csv_field("prob_" + name(c));
  text += ",error\n";
  for (size_t f = 0; f < files.size(); ++f) {
    text += csv_field(files[f]);
    const int64_t r = row_of[f];
    if (r < 0) {
      const auto why = errors.find(f);
      text += "," + std::string(static_cast<size_t>(classes), ',') + "," +
              csv_field(why != errors.end() ? why->second : "could not be read") + "\n";
      continue;
    }
    const float* p = probs.data_ptr<float>() + r * classes;
    text += "," + csv_field(joined(predicted_classes(p, classes, multilabel), name));
    for (int64_t c = 0; c < classes; ++c) text += fmt::format(",{:.6g}", p[c]);
    text += ",\n";
  }
  util::write_file_atomically(path.string(), text);
  return files.size();
}

}  // namespace runner::output
