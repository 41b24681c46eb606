#include "output/best_evaluation.hpp"
#include "data/class_name.hpp"
#include "runner/metrics/average_precision.hpp"
#include "util/base64.hpp"

#include <algorithm>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace runner::output {

using data::class_name;
using nlohmann::json;

namespace {

// The sample as a PNG a browser shows: u8 (floats scaled from [0,1] or [0,255]), RGB -> BGR.
std::string png_of(const cv::Mat& image) {
  cv::Mat u8 = image;
  if (image.depth() != CV_8U) {
    double lo = 0, hi = 0;
    cv::minMaxLoc(image.reshape(1), &lo, &hi);
    image.convertTo(u8, CV_8U, hi <= 1.0 ? 255.0 : 1.0);
  }
  if (u8.channels() == 3) cv::cvtColor(u8, u8, cv::COLOR_RGB2BGR);
  std::vector<uchar> png;
  if (!cv::imencode(".png", u8, png)) return "";
  return util::base64(std::string(png.begin(), png.end()));
}

}  // namespace

json confusion_summary(const torch::Tensor& logits, const std::vector<int64_t>& labels,
                       const std::vector<std::string>& class_names) {
  const int64_t classes = logits.size(1);
  const auto predicted = logits.argmax(1).to(torch::kLong).contiguous();
  const auto* p = predicted.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> cm(classes, std::vector<int64_t>(classes, 0));
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= 0 && labels[i] < classes) ++cm[labels[i]][p[i]];
  json per_class = json::array();
  json names = json::array();
  for (int64_t c = 0; c < classes; ++c) {
    int64_t tp = cm[c][c], predicted_c = 0, support = 0;
    for (int64_t k = 0; k < classes; ++k) predicted_c += cm[k][c], support += cm[c][k];
    const double precision = predicted_c ? double(tp) / predicted_c : 0.0;
    const double recall = support ? double(tp) / support : 0.0;
    const double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
    per_class.push_back({{"class", class_name(class_names, c)},
                         {"precision", precision},
                         {"recall", recall},
                         {"f1", f1},
                         {"support", support}});
    names.push_back(class_name(class_names, c));
  }
  return {{"confusion_matrix", cm}, {"classes", names}, {"per_class", per_class}};
}

json multilabel_summary(const torch::Tensor& logits, const torch::Tensor& targets,
                        const std::vector<std::string>& class_names) {
  const torch::Tensor scores = logits.to(torch::kFloat).t().contiguous();
  const torch::Tensor truth = (targets > 0.5).t().contiguous();
  const torch::Tensor predicted = (scores.sigmoid() >= 0.5);
  const int64_t n = logits.size(0);
  json per_class = json::array(), names = json::array();
  for (int64_t c = 0; c < logits.size(1); ++c) {
    const double tp = predicted[c].logical_and(truth[c]).sum().item<double>();
    const double predicted_c = predicted[c].sum().item<double>();
    const double support = truth[c].sum().item<double>();
    const float* s = scores[c].data_ptr<float>();
    const torch::Tensor t = truth[c].to(torch::kFloat).contiguous();
    const std::vector<float> score(s, s + n),
        positive(t.data_ptr<float>(), t.data_ptr<float>() + n);
    per_class.push_back(
        {{"class", class_name(class_names, c)},
         {"precision", predicted_c > 0 ? tp / predicted_c : 0.0},
         {"recall", support > 0 ? tp / support : 0.0},
         {"f1", predicted_c + support > 0 ? 2 * tp / (predicted_c + support) : 0.0},
         {"support", static_cast<int64_t>(support)},
         {"ap", support > 0 ? json(metrics::average_precision(score, positive)) : json(nullptr)}});
    names.push_back(class_name(class_names, c));
  }
  return {{"classes", names}, {"per_class", per_class}, {"threshold", 0.5}};
}

json confident_mistakes(const torch::Tensor& logits, const std::vector<int64_t>& labels,
                        const data::Dataset& dataset, const std::vector<std::string>& class_names,
                        size_t count, const std::vector<int64_t>& indices) {
  const auto probs = torch::softmax(logits.to(torch::kFloat), 1);
  const auto [confidence, predicted] = probs.max(1);
  const auto conf = confidence.contiguous();
  const auto pred = predicted.to(torch::kLong).contiguous();
  std::vector<size_t> wrong;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= 0 && pred.data_ptr<int64_t>()[i] != labels[i]) wrong.push_back(i);
  const float* c = conf.data_ptr<float>();
  std::stable_sort(wrong.begin(), wrong.end(), [&](size_t a, size_t b) { return c[a] > c[b]; });
  if (wrong.size() > count) wrong.resize(count);
  json out = json::array();
  for (size_t i : wrong) {
    const size_t sample = indices.empty() ? i : static_cast<size_t>(indices[i]);
    json example = {{"index", sample},
                    {"true", class_name(class_names, labels[i])},
                    {"predicted", class_name(class_names, pred.data_ptr<int64_t>()[i])},
                    {"confidence", c[i]},
                    {"png", png_of(dataset.get(sample).image)}};
    if (const std::string file = data::sample_file(dataset, sample); !file.empty())
      example["file"] = file;
    out.push_back(std::move(example));
  }
  return out;
}

}  // namespace runner::output
