// Data that does not fit the model is one line naming the key, where it is set and what to set,
// before anything trains.

#include <gtest/gtest.h>

#include "run/build_run_parts.hpp"
#include "run/shape_checks.hpp"
#include "runner/error.hpp"
#include "small_experiment.hpp"

namespace runner::run {
namespace {

std::string check_error(const std::vector<std::string>& overrides) {
  runner::testing::TempDir dir;
  const auto e = runner::testing::load_small_experiment(dir, overrides);
  try {
    check_data_fits_model(e, build_run_parts(e, PartsRequest{}));
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(ShapeChecks, DataThatFitsPasses) { EXPECT_EQ(check_error({}), ""); }

TEST(ShapeChecks, TooFewClassesNamesTheKeyAndTheFix) {
  const std::string error = check_error({"model.num_classes=3"});
  EXPECT_EQ(error.rfind("--set model.num_classes=3: ", 0), 0u) << "where the value came from";
  EXPECT_NE(error.find("model.num_classes 3 but the dataset (synthetic) has 4 classes"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("set model.num_classes: 4"), std::string::npos) << error;
}

TEST(ShapeChecks, ChannelsTheFirstLayerDoesNotTake) {
  const std::string error = check_error({"model.in_chans=3"});
  EXPECT_NE(error.find("model.in_chans 3 but the training images have 1 channel"),
            std::string::npos)
      << error;
}

TEST(ShapeChecks, TheQuietOverloadBuildsTheDataItself) {
  runner::testing::TempDir dir;
  EXPECT_THROW(
      check_data_fits_model(runner::testing::load_small_experiment(dir, {"model.num_classes=2"})),
      ConfigError);
}

}  // namespace
}  // namespace runner::run
