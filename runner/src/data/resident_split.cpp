#include "data/resident_split.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include <torch/torch.h>

#include "data/batched_pipeline.hpp"
#include "runner/error.hpp"

namespace runner::data {

int64_t resident_bytes(const Dataset& dataset) {
  if (dataset.size() == 0) return 0;
  const cv::Mat first = dataset.get(0).image;
  return static_cast<int64_t>(first.total() * first.elemSize()) *
         static_cast<int64_t>(dataset.size());
}

std::shared_ptr<const ResidentSplit> make_resident_split(const Dataset& dataset,
                                                         const torch::Device& device) {
  const auto count = static_cast<int64_t>(dataset.size());
  auto split = std::make_shared<ResidentSplit>();
  if (count == 0) {
    split->images = torch::empty({0, 1, 1, 1}, torch::kByte).to(device);
    split->labels = torch::empty({0}, torch::kLong).to(device);
    return split;
  }
  const cv::Mat first = dataset.get(0).image;
  const int rows = first.rows, cols = first.cols, channels = first.channels();
  // Decoded HWC on the host, as the datasets give them; one permute to CHW on the way over.
  torch::Tensor images = torch::empty({count, rows, cols, channels}, torch::kByte);
  torch::Tensor labels = torch::empty({count}, torch::kLong);
  auto* pixels = images.data_ptr<uint8_t>();
  auto* label_values = labels.data_ptr<int64_t>();
  const size_t image_bytes = static_cast<size_t>(rows) * cols * channels;
  for (int64_t i = 0; i < count; ++i) {
    Sample sample = dataset.get(static_cast<size_t>(i));
    const cv::Mat& image = sample.image;
    if (image.depth() != CV_8U || image.rows != rows || image.cols != cols ||
        image.channels() != channels)
      throw DataError(
          "data.device: sample " + std::to_string(i) + " of " + dataset.describe() + " is " +
          std::to_string(image.rows) + "x" + std::to_string(image.cols) + "x" +
          std::to_string(image.channels()) + (image.depth() == CV_8U ? " u8" : " non-u8") +
          ", the first " + std::to_string(rows) + "x" + std::to_string(cols) + "x" +
          std::to_string(channels) +
          " u8: a split held as one tensor needs u8 images of one size; set data.device: loader");
    const cv::Mat packed = image.isContinuous() ? image : image.clone();
    std::memcpy(pixels + i * image_bytes, packed.data, image_bytes);
    label_values[i] = sample.label;
  }
  split->images = images.permute({0, 3, 1, 2}).contiguous().to(device);
  split->labels = labels.to(device);
  return split;
}

ResidentChoice choose_resident(
    const Dataset& dataset, const std::vector<std::pair<const Pipeline*, std::string>>& pipelines,
    const torch::Device& device, double device_bytes, double share) {
  const double bytes = static_cast<double>(resident_bytes(dataset));
  if (device_bytes <= 0 || bytes > share * device_bytes) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "the decoded split (%.0f MiB) is more than data.device_memory_share %g of the "
                  "device's %.0f MiB",
                  bytes / (1 << 20), share, device_bytes / (1 << 20));
    return {nullptr, text};
  }
  try {
    for (const auto& [pipeline, list] : pipelines) BatchedPipeline(*pipeline, list);
    // Decoding tells whether every image has the first one's size and depth.
    return {make_resident_split(dataset, device), ""};
  } catch (const Error& e) {
    std::string reason = e.what();
    // The errors' advice (set data.device: loader) is what auto does anyway.
    for (const char* advice : {", so it cannot run on whole batches", ": a split held as one"})
      if (const auto cut = reason.find(advice); cut != std::string::npos) reason.resize(cut);
    return {nullptr, reason};
  }
}

}  // namespace runner::data
