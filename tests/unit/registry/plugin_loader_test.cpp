// A shared-library plugin as its author writes it (plugins/examples): loaded by path, its entry
// registered with the schema the public helpers make, its parameter acting, its coin drawn for
// every sample whatever p.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include "registry/plugin_loader.hpp"
#include "runner/data/transform.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"

namespace runner {
namespace {

const Registry<TransformFactory>::Entry& invert() {
  load_plugin(RUNNER_EXAMPLE_PLUGIN);
  load_plugin(RUNNER_EXAMPLE_PLUGIN);  // a second load of the same file does nothing
  return registries().transforms.at("invert");
}

TEST(PluginLoader, TheExamplePluginRegistersWithThePublicSchemaHelpers) {
  const auto& entry = invert();
  EXPECT_EQ(entry.schema.at("additionalProperties"), false) << "a misspelled key is an error";
  EXPECT_EQ(entry.schema.at("properties").at("p").at("default"), 1.0);
  EXPECT_EQ(entry.schema.at("properties").at("p").at("maximum"), 1);
}

TEST(PluginLoader, ItsParameterActsAndItsCoinIsAlwaysDrawn) {
  const auto& entry = invert();
  const auto always = entry.factory({{"p", 1.0}});
  const auto never = entry.factory({{"p", 0.0}});
  cv::Mat a(2, 2, CV_8UC1, cv::Scalar(10)), b = a.clone();
  data::Rng ra(1, 0, 0), rb(1, 0, 0);
  always->apply(a, ra);
  never->apply(b, rb);
  EXPECT_EQ(a.at<uint8_t>(0, 0), 245);
  EXPECT_EQ(b.at<uint8_t>(0, 0), 10);
  EXPECT_EQ(ra.next_u64(), rb.next_u64()) << "the same draws whatever p";
}

TEST(PluginLoader, AMissingLibraryNamesTheFile) {
  try {
    load_plugin("/nonexistent/libnothing.so");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnothing.so"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace runner
