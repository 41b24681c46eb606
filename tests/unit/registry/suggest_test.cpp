#include <gtest/gtest.h>

#include "runner/suggest.hpp"

namespace runner {
namespace {

TEST(Suggest, SwappedLettersCostOneEdit) {
  EXPECT_EQ(edit_distance("lr", "rl"), 1u);
  EXPECT_EQ(edit_distance("convnext_smal", "convnext_small"), 1u);
  EXPECT_EQ(edit_distance("abc", "xyz"), 3u);
}

TEST(Suggest, ProposesTheClosestName) {
  EXPECT_EQ(did_you_mean("lrr", {"lr", "betas", "eps"}), " (did you mean 'lr'?)");
  EXPECT_EQ(did_you_mean("convnext_smal", {"convnext_small", "convnext_base", "resnet18"}),
            " (did you mean 'convnext_small'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", {"lr", "betas"}), "");
}

}  // namespace
}  // namespace runner
