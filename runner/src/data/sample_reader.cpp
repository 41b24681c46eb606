#include "data/sample_reader.hpp"

#include "util/image_header.hpp"

namespace runner::data {

SampleReader::SampleReader(const Dataset& dataset, const Pipeline& pipeline, bool reduced_decode)
    : dataset_(dataset), pipeline_(pipeline) {
  if (!reduced_decode || pipeline.empty()) return;
  encoded_ = encoded_form(dataset);
  if (encoded_)
    scaled_ = dynamic_cast<const ScaledSourceTransform*>(pipeline.transforms().front().get());
}

int SampleReader::reduction(const std::string& bytes, uint64_t seed, uint64_t epoch, uint64_t key,
                            int& rows, int& cols) const {
  rows = cols = 0;
  if (!scaled_) return 1;
  const auto header = util::image_header_of(bytes, "the image");
  if (!header || header->format != "jpeg") return 1;
  rows = header->height;
  cols = header->width;
  return scaled_->source_reduction(Rng(seed, epoch, key), rows, cols);
}

void SampleReader::transform(Sample& sample, uint64_t seed, uint64_t epoch, uint64_t key, int rows,
                             int cols, int reduction) const {
  if (reduction == 1) {
    pipeline_.apply(sample, seed, epoch, key);
    return;
  }
  Rng rng(seed, epoch, key);
  scaled_->apply_reduced(sample.image, rng, rows, cols, reduction);
  const auto& transforms = pipeline_.transforms();
  for (size_t t = 1; t < transforms.size(); ++t) transforms[t]->apply(sample.image, rng);
}

Sample SampleReader::read(const SampledIndex& item, uint64_t seed, uint64_t epoch) const {
  if (!scaled_) {
    Sample sample = dataset_.get(item.index);
    pipeline_.apply(sample, seed, epoch, item.key);
    return sample;
  }
  const std::string bytes = encoded_->encoded(item.index);
  int rows = 0, cols = 0;
  const int r = reduction(bytes, seed, epoch, item.key, rows, cols);
  Sample sample = encoded_->decode(item.index, bytes, r);
  transform(sample, seed, epoch, item.key, rows, cols, r);
  return sample;
}

}  // namespace runner::data
