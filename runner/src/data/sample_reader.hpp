#pragma once
// One sample as the loader makes it: read, decoded, transformed. Where the first transform
// shrinks the image (resize, random_resized_crop: ScaledSourceTransform) and the dataset stores
// encoded images, a JPEG is decoded at the smallest 1/2, 1/4 or 1/8 scale that still covers
// that transform's output (data.reduced_decode), the draws the same as on the full image.

#include <cstdint>
#include <string>

#include "data/pipeline.hpp"
#include "data/sampler.hpp"
#include "runner/data/dataset.hpp"
#include "runner/data/scaled_source.hpp"

namespace runner::data {

class SampleReader {
 public:
  /// `dataset` and `pipeline` must outlive the reader. `reduced_decode` false: always whole.
  SampleReader(const Dataset& dataset, const Pipeline& pipeline, bool reduced_decode);

  /// The sample at `item` of `epoch`, through the pipeline with the stream (seed, epoch, key).
  Sample read(const SampledIndex& item, uint64_t seed, uint64_t epoch) const;

  /// Whether JPEGs may be decoded smaller (an encoded dataset and a shrinking first transform).
  bool reduces() const { return scaled_ != nullptr; }
  /// The reduction for the JPEG `bytes` of the sample keyed `key`, 1 for another format or
  /// when reduces() is false; `rows` and `cols` get the full image's size (0 when unknown).
  int reduction(const std::string& bytes, uint64_t seed, uint64_t epoch, uint64_t key, int& rows,
                int& cols) const;
  /// The pipeline on `sample` decoded at 1/reduction of a rows x cols source.
  void transform(Sample& sample, uint64_t seed, uint64_t epoch, uint64_t key, int rows, int cols,
                 int reduction) const;

 private:
  const Dataset& dataset_;
  const Pipeline& pipeline_;
  const EncodedDataset* encoded_ = nullptr;
  const ScaledSourceTransform* scaled_ = nullptr;
};

}  // namespace runner::data
