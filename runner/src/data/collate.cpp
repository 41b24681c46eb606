#include <cstring>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>
#include <opencv2/core.hpp>

#include "data/batch.hpp"
#include "data/batch_memory.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

/// Writes `image` (HxWxC, any depth) into `dst` as C planes of H*W floats: OpenCV's vectorised
/// split straight into the planes (a strided loop per value was a fifth of the loader's time).
void write_chw(const cv::Mat& image, float* dst) {
  const int channels = image.channels();
  const size_t plane = static_cast<size_t>(image.rows) * image.cols;
  cv::Mat f = image;
  if (image.depth() != CV_32F) image.convertTo(f, CV_32F);  // exact for u8 (and the others)
  if (channels == 1) {
    f.copyTo(cv::Mat(f.rows, f.cols, CV_32F, dst));
    return;
  }
  std::vector<cv::Mat> planes;
  for (int c = 0; c < channels; ++c) planes.emplace_back(f.rows, f.cols, CV_32F, dst + c * plane);
  cv::split(f, planes);
}

}  // namespace

Batch collate(const std::vector<Sample>& samples, const std::vector<size_t>& indices,
              const std::vector<bool>& padding, bool pin_memory) {
  if (samples.empty()) throw Error("collate: empty batch");
  if (indices.size() != samples.size() || padding.size() != samples.size())
    throw Error("collate: indices/padding do not match the samples");
  const cv::Mat& first = samples[0].image;
  const int64_t b = static_cast<int64_t>(samples.size());
  const int64_t c = first.channels(), h = first.rows, w = first.cols;
  for (size_t i = 1; i < samples.size(); ++i) {
    const cv::Mat& m = samples[i].image;
    if (m.rows != h || m.cols != w || m.channels() != c)
      throw DataError("collate: sample " + std::to_string(indices[i]) + " is " +
                      std::to_string(m.rows) + "x" + std::to_string(m.cols) + "x" +
                      std::to_string(m.channels()) + " but sample " + std::to_string(indices[0]) +
                      " in the same batch is " + std::to_string(h) + "x" + std::to_string(w) + "x" +
                      std::to_string(c) + "; add a resize transform");
  }
  auto options = torch::TensorOptions().pinned_memory(pin_memory && torch::cuda::is_available());
  Batch batch;
  batch.size = b;
  // Pinned memory for CUDA copies comes from torch's caching host allocator; other batches reuse
  // the pages of earlier ones (batch_memory.hpp).
  batch.images = options.pinned_memory()
                     ? torch::empty({b, c, h, w}, options.dtype(torch::kFloat32))
                     : pooled_float_tensor({b, c, h, w});
  batch.labels = torch::empty({b}, options.dtype(torch::kInt64));
  batch.indices = torch::empty({b}, options.dtype(torch::kInt64));
  batch.padding = torch::empty({b}, options.dtype(torch::kBool));
  float* images = batch.images.data_ptr<float>();
  int64_t* labels = batch.labels.data_ptr<int64_t>();
  int64_t* idx = batch.indices.data_ptr<int64_t>();
  bool* pad = batch.padding.data_ptr<bool>();
  const size_t per_sample = static_cast<size_t>(c * h * w);
  for (int64_t i = 0; i < b; ++i) {
    write_chw(samples[i].image, images + i * per_sample);
    labels[i] = samples[i].label;
    idx[i] = static_cast<int64_t>(indices[i]);
    pad[i] = padding[i];
  }
  return batch;
}

torch::Tensor multi_hot_targets(const Dataset& dataset, const torch::Tensor& indices,
                                int64_t classes) {
  const torch::Tensor rows = indices.to(torch::kLong).cpu().contiguous();
  torch::Tensor targets = torch::zeros({rows.numel(), classes}, torch::kFloat);
  auto t = targets.accessor<float, 2>();
  const int64_t* index = rows.data_ptr<int64_t>();
  for (int64_t i = 0; i < rows.numel(); ++i) {
    for (const int64_t c : sample_labels(dataset, static_cast<size_t>(index[i]))) {
      if (c < 0 || c >= classes)
        throw DataError("sample " + std::to_string(index[i]) + " of " + dataset.describe() +
                        " has label " + std::to_string(c) + ", outside the " +
                        std::to_string(classes) + " classes");
      t[i][c] = 1.0f;
    }
  }
  return targets;
}

}  // namespace runner::data
