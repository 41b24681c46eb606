// data.device's resident split and what auto decides (choose_resident): kept where it fits and
// every transform has a batched form and every image one size, else left to the loader with the
// reason auto logs. On CPU here; auto calls it with the GPU and its memory.

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/data_test_util.hpp"
#include "data/resident_split.hpp"
#include "runner/registries.hpp"

namespace runner::data {
namespace {

std::shared_ptr<Dataset> synthetic_split(size_t n, int h, int w) {
  return testing::make_dataset("synthetic", {{"train_size", n},
                                             {"val_size", 0},
                                             {"test_size", 0},
                                             {"height", h},
                                             {"width", w},
                                             {"seed", 4}})
      .train;
}

Pipeline transforms_of(const char* entries) {
  return build_pipeline(nlohmann::json::parse(entries), registries().transforms);
}

/// Images of two sizes: the first 10 x 10, the rest 12 x 12.
class MixedSizes : public Dataset {
 public:
  size_t size() const override { return 4; }
  Sample get(size_t index) const override {
    const int side = index == 0 ? 10 : 12;
    return Sample{cv::Mat(side, side, CV_8UC1, cv::Scalar(static_cast<double>(index))), 1};
  }
  std::string describe() const override { return "mixed"; }
};

TEST(ResidentSplit, HoldsEverySampleAsUint8ChannelsFirstWithItsLabel) {
  const auto data = synthetic_split(20, 6, 5);
  const auto split = make_resident_split(*data, torch::kCPU);
  ASSERT_EQ(split->images.sizes(), (std::vector<int64_t>{20, 1, 6, 5}));
  EXPECT_EQ(split->images.scalar_type(), torch::kByte);
  for (size_t i : {size_t{0}, size_t{7}, size_t{19}}) {
    const Sample sample = data->get(i);
    const torch::Tensor expected =
        torch::from_blob(sample.image.data, {6, 5}, torch::kByte).clone();
    EXPECT_TRUE(torch::equal(split->images[static_cast<int64_t>(i)][0], expected)) << i;
    EXPECT_EQ(split->labels[static_cast<int64_t>(i)].item<int64_t>(), sample.label) << i;
  }
}

TEST(ResidentSplit, ASplitOverTheMemoryShareIsLeftToTheLoaderWithTheReason) {
  const auto data = synthetic_split(100, 8, 8);  // 6400 bytes decoded
  const Pipeline flips = transforms_of(R"([{"name": "horizontal_flip"}])");
  const std::vector<std::pair<const Pipeline*, std::string>> lists = {{&flips, "list"}};
  const ResidentChoice fits = choose_resident(*data, lists, torch::kCPU, 6400 / 0.25, 0.25);
  ASSERT_TRUE(fits.split) << fits.why_not;
  EXPECT_EQ(fits.split->images.size(0), 100);
  const ResidentChoice over = choose_resident(*data, lists, torch::kCPU, 6399 / 0.25, 0.25);
  EXPECT_FALSE(over.split);
  EXPECT_NE(over.why_not.find("is more than data.device_memory_share 0.25"), std::string::npos)
      << over.why_not;
}

TEST(ResidentSplit, ATransformWithoutABatchedFormOrImagesOfTwoSizesLeaveItToTheLoader) {
  const auto data = synthetic_split(10, 8, 8);
  const Pipeline flips = transforms_of(R"([{"name": "horizontal_flip"}])");
  const Pipeline wrap = transforms_of(R"([{"name": "resize", "height": 9, "width": 9},
                      {"name": "shift_scale_rotate", "border_mode": "wrap"}])");
  const ResidentChoice transform =
      choose_resident(*data, {{&flips, "data.train_transforms"}, {&wrap, "data.eval_transforms"}},
                      torch::kCPU, 1e9, 0.25);
  EXPECT_FALSE(transform.split);
  EXPECT_EQ(transform.why_not,
            "data.eval_transforms[1] shift_scale_rotate has no batched form with border_mode wrap "
            "(grid_sample has no wrapping border)");
  const ResidentChoice sizes =
      choose_resident(MixedSizes(), {{&flips, "list"}}, torch::kCPU, 1e9, 0.25);
  EXPECT_FALSE(sizes.split);
  EXPECT_EQ(sizes.why_not, "data.device: sample 1 of mixed is 12x12x1 u8, the first 10x10x1 u8");
}

}  // namespace
}  // namespace runner::data
