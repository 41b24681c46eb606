// DataLoader: batch contents, determinism across worker counts, resume, ranks, errors.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/data_test_util.hpp"
#include "data/loader.hpp"
#include "runner/error.hpp"

namespace runner::data {
namespace {

std::shared_ptr<Dataset> synthetic(size_t n, int h = 8, int w = 8, int c = 1) {
  return testing::make_dataset("synthetic", {{"train_size", n},
                                             {"val_size", 0},
                                             {"test_size", 0},
                                             {"height", h},
                                             {"width", w},
                                             {"channels", c},
                                             {"seed", 11}})
      .train;
}

Pipeline augmentations() {
  return build_pipeline(nlohmann::json::parse(R"([{"name": "horizontal_flip", "p": 0.5},
                                {"name": "vertical_flip", "p": 0.5},
                                {"name": "random_brightness_contrast", "p": 0.5},
                                {"name": "shift_scale_rotate", "p": 0.5},
                                {"name": "resize", "height": 12, "width": 12},
                                {"name": "normalize", "mean": 0.13, "std": 0.3}])"),
                        registries().transforms);
}

std::vector<Batch> epoch_of(DataLoader& loader, uint64_t epoch, size_t skip = 0) {
  loader.start_epoch(epoch, skip);
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].images, b[i].images)) << "batch " << i;
    EXPECT_TRUE(torch::equal(a[i].labels, b[i].labels)) << "batch " << i;
    EXPECT_TRUE(torch::equal(a[i].indices, b[i].indices)) << "batch " << i;
    EXPECT_TRUE(torch::equal(a[i].padding, b[i].padding)) << "batch " << i;
  }
}

TEST(DataLoader, BatchesHoldUnscaledFloatPixelsLabelsAndIndices) {
  auto data = synthetic(10, 3, 4);
  LoaderOptions o;
  o.batch_size = 4;
  DataLoader loader(data, Pipeline(), o);
  EXPECT_EQ(loader.num_batches(), 3u);
  auto batches = epoch_of(loader, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].size, 2);
  const Batch& b = batches[1];
  EXPECT_EQ(b.images.sizes(), (std::vector<int64_t>{4, 1, 3, 4}));
  EXPECT_EQ(b.images.dtype(), torch::kFloat32);
  EXPECT_EQ(b.labels.dtype(), torch::kInt64);
  EXPECT_EQ(b.indices[0].item<int64_t>(), 4);
  const Sample s = data->get(4);
  EXPECT_EQ(b.labels[0].item<int64_t>(), s.label);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x)
      EXPECT_EQ(b.images[0][0][y][x].item<float>(), static_cast<float>(s.image.at<uint8_t>(y, x)));
  EXPECT_FALSE(b.padding.any().item<bool>());
  EXPECT_EQ(loader.stats().batches, 3u);
}

TEST(DataLoader, CollatesChannelsFirst) {
  cv::Mat rgb(1, 2, CV_8UC3);
  rgb.at<cv::Vec3b>(0, 0) = {1, 2, 3};
  rgb.at<cv::Vec3b>(0, 1) = {4, 5, 6};
  const Batch b = collate({Sample{rgb, 7}}, {0}, {false});
  EXPECT_EQ(b.images.sizes(), (std::vector<int64_t>{1, 3, 1, 2}));
  EXPECT_EQ(b.images[0][0][0][1].item<float>(), 4.0f);
  EXPECT_EQ(b.images[0][2][0][0].item<float>(), 3.0f);
  // Images of different sizes in one batch: the error names the odd sample.
  try {
    collate({Sample{rgb, 0}, Sample{cv::Mat(2, 2, CV_8UC3), 0}}, {5, 9}, {false, false});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("sample 9 is 2x2x3"), std::string::npos) << e.what();
  }
}

TEST(DataLoader, SameBatchesBitForBitWithZeroOneOrEightWorkers) {
  auto data = synthetic(203);
  std::vector<std::vector<Batch>> runs;
  for (size_t workers : {0, 1, 8}) {
    LoaderOptions o;
    o.batch_size = 16;
    o.shuffle = true;
    o.seed = 5;
    o.num_workers = workers;
    o.prefetch = 3;
    DataLoader loader(data, augmentations(), o);
    auto e0 = epoch_of(loader, 0);
    auto e1 = epoch_of(loader, 1);
    e0.insert(e0.end(), e1.begin(), e1.end());
    runs.push_back(std::move(e0));
  }
  ASSERT_EQ(runs[0].size(), 26u);
  expect_same(runs[0], runs[1]);
  expect_same(runs[0], runs[2]);
  // Epochs differ (new shuffle and new augmentation).
  EXPECT_FALSE(torch::equal(runs[0][0].indices, runs[0][13].indices));
}

TEST(DataLoader, AugmentationDependsOnlyOnSeedEpochAndIndex) {
  auto data = synthetic(40);
  LoaderOptions plain;
  plain.batch_size = 40;
  LoaderOptions shuffled = plain;
  shuffled.shuffle = true;
  shuffled.num_workers = 2;
  DataLoader a(data, augmentations(), plain), b(data, augmentations(), shuffled);
  const Batch in_order = epoch_of(a, 3)[0];
  const Batch mixed = epoch_of(b, 3)[0];
  int differing = 0;
  for (int64_t k = 0; k < 40; ++k) {
    const int64_t index = mixed.indices[k].item<int64_t>();
    EXPECT_TRUE(torch::equal(mixed.images[k], in_order.images[index])) << "sample " << index;
    differing += index != k;
  }
  EXPECT_GT(differing, 0);
  // A different epoch augments differently.
  EXPECT_FALSE(torch::equal(epoch_of(a, 4)[0].images, in_order.images));
}

TEST(DataLoader, ResumesMidEpochWithTheSameBatches) {
  auto data = synthetic(100);
  LoaderOptions o;
  o.batch_size = 8;
  o.shuffle = true;
  o.num_workers = 2;
  DataLoader loader(data, augmentations(), o);
  const auto full = epoch_of(loader, 2);
  const auto resumed = epoch_of(loader, 2, 5);
  ASSERT_EQ(resumed.size(), full.size() - 5);
  expect_same(std::vector<Batch>(full.begin() + 5, full.end()), resumed);
  EXPECT_TRUE(epoch_of(loader, 2, 99).empty());
}

TEST(DataLoader, DropLastDropsThePartialBatch) {
  auto data = synthetic(203);
  LoaderOptions o;
  o.batch_size = 16;
  o.drop_last = true;
  DataLoader loader(data, Pipeline(), o);
  const auto batches = epoch_of(loader, 0);
  ASSERT_EQ(batches.size(), 12u);
  for (const auto& b : batches) EXPECT_EQ(b.size, 16);
}

TEST(DataLoader, EveryRankYieldsEqualBatchesAndPaddingIsFlagged) {
  auto data = synthetic(1001, 2, 2);
  const size_t world = 3;
  std::vector<std::vector<Batch>> per_rank;
  for (size_t r = 0; r < world; ++r) {
    LoaderOptions o;
    o.batch_size = 64;
    o.rank = r;
    o.world_size = world;
    o.num_workers = 1;
    DataLoader loader(data, Pipeline(), o);
    per_rank.push_back(epoch_of(loader, 0));
  }
  std::multiset<int64_t> real;
  size_t padded = 0;
  for (size_t r = 0; r < world; ++r) {
    ASSERT_EQ(per_rank[r].size(), per_rank[0].size());
    for (size_t i = 0; i < per_rank[r].size(); ++i) {
      const Batch& b = per_rank[r][i];
      EXPECT_EQ(b.size, per_rank[0][i].size);
      for (int64_t k = 0; k < b.size; ++k) {
        if (b.padding[k].item<bool>())
          ++padded;
        else
          real.insert(b.indices[k].item<int64_t>());
      }
    }
  }
  EXPECT_EQ(padded, 1u);
  ASSERT_EQ(real.size(), 1001u);
  EXPECT_EQ(std::set<int64_t>(real.begin(), real.end()).size(), 1001u);
}

TEST(DataLoader, ResidentBatchesFollowTheSamplersOrderOnEveryRankAndOnResume) {
  // data.device: the same rows, labels, padding flags and augmentation draws per sample as the
  // per-sample loader, rank by rank, epoch by epoch, and from a mid-epoch resume.
  auto data = synthetic(203, 8, 8);
  const auto resident = make_resident_split(*data, torch::kCPU);
  for (size_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o;
    o.batch_size = 16;
    o.shuffle = true;
    o.seed = 9;
    o.rank = rank;
    o.world_size = 3;
    o.num_workers = 1;
    DataLoader per_sample(data, augmentations(), o);
    o.resident = resident;
    DataLoader batched(data, augmentations(), o);
    for (uint64_t epoch : {0, 3}) {
      const auto expected = epoch_of(per_sample, epoch);
      for (size_t skip : {size_t{0}, size_t{2}}) {
        const auto got = epoch_of(batched, epoch, skip);
        ASSERT_EQ(got.size() + skip, expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
          const Batch& want = expected[i + skip];
          EXPECT_TRUE(torch::equal(got[i].indices, want.indices)) << rank << " " << i;
          EXPECT_TRUE(torch::equal(got[i].labels, want.labels)) << rank << " " << i;
          EXPECT_TRUE(torch::equal(got[i].padding, want.padding)) << rank << " " << i;
          // Resize and shift_scale_rotate round differently (a few u8 levels), a different draw
          // would differ by far more; normalize divides by 0.3 x 255.
          EXPECT_LT((got[i].images - want.images).abs().max().item<double>(), 10.0 / (0.3 * 255))
              << rank << " " << i;
        }
      }
    }
  }
}

class FailingDataset : public Dataset {
 public:
  size_t size() const override { return 20; }
  Sample get(size_t index) const override {
    if (index == 13) throw DataError("bad record");
    return Sample{cv::Mat(2, 2, CV_8UC1, cv::Scalar(1)), 0};
  }
};

TEST(DataLoader, WorkerFailureIsRethrownWithTheSampleIndex) {
  for (size_t workers : {0, 3}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.num_workers = workers;
    DataLoader loader(std::make_shared<FailingDataset>(), Pipeline(), o);
    loader.start_epoch(0);
    size_t delivered = 0;
    try {
      while (loader.next()) ++delivered;
      FAIL() << "expected a DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("sample 13"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad record"), std::string::npos) << e.what();
    }
    EXPECT_EQ(delivered, 3u);  // batches 0..2 arrive before the failing batch 3
  }
}

// Counts the samples read, to see how far ahead of the consumer the workers run.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(std::shared_ptr<Dataset> inner) : inner_(std::move(inner)) {}
  size_t size() const override { return inner_->size(); }
  Sample get(size_t index) const override {
    ++reads;
    return inner_->get(index);
  }
  mutable std::atomic<int> reads{0};

 private:
  std::shared_ptr<Dataset> inner_;
};

// data.prefetch_batches: the workers read at most that many batches past the consumer (memory).
TEST(DataLoader, PrefetchBatchesBoundsHowFarWorkersReadAhead) {
  using namespace std::chrono_literals;
  for (size_t prefetch : {1, 4}) {
    auto data = std::make_shared<CountingDataset>(synthetic(64));
    LoaderOptions o;
    o.batch_size = 2;
    o.num_workers = 1;
    o.prefetch = prefetch;
    DataLoader loader(data, build_pipeline(nlohmann::json::array(), registries().transforms), o);
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next());
    // The worker fills up to the bound and then waits there; give it ample time to get there.
    const int bound = static_cast<int>((1 + prefetch) * o.batch_size);
    for (int i = 0; i < 500 && data->reads < bound; ++i) std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(data->reads.load(), bound) << "prefetch " << prefetch;
  }
}

TEST(DataLoader, StopsCleanlyMidEpoch) {
  auto data = synthetic(500);
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 4;
  o.prefetch = 2;
  auto loader = std::make_unique<DataLoader>(data, augmentations(), o);
  loader->start_epoch(0);
  ASSERT_TRUE(loader->next());
  loader->start_epoch(1);  // abandons epoch 0
  ASSERT_TRUE(loader->next());
  // Destroying it joins the workers: it must end, here within 20 s. A hang cannot be undone
  // in-process (the thread stays blocked), so it fails the test and ends the process at once.
  std::promise<void> joined;
  auto finished = joined.get_future();
  std::thread([&loader, &joined] {
    loader.reset();
    joined.set_value();
  }).detach();
  if (finished.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "destroying a loader abandoned mid-epoch did not join its workers in 20 s";
    std::fflush(nullptr);
    std::_Exit(1);
  }
  EXPECT_EQ(loader, nullptr);
}

TEST(DataLoader, BuildPipelineRejectsUnknownTransforms) {
  EXPECT_THROW(build_pipeline(nlohmann::json::parse(R"([{"name": "horizontal_flipp"}])"),
                              registries().transforms),
               ConfigError);
  EXPECT_EQ(build_pipeline(nullptr, registries().transforms).size(), 0u);
}

}  // namespace
}  // namespace runner::data
