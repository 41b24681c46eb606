// What `runner config` prints and every run's config.yaml holds: short floats, the plugin's
// selecting key first, and text that reads back to the same document.

#include <cstdlib>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "config/source_map.hpp"
#include "config/yaml_emit.hpp"
#include "config/yaml_json.hpp"

namespace runner::config {
namespace {

nlohmann::json read_back(const std::string& text) {
  SourceMap marks;
  return parse_yaml(text, "printed.yaml", marks);
}

TEST(YamlEmit, FloatsAreTheShortestTextThatReadsBack) {
  const nlohmann::json doc = {
      {"mean", 0.131},    {"lr", 5e-05},       {"betas", {0.9, 0.999}},
      {"one", 1.0},       {"big", 1e22},       {"third", 1.0 / 3.0},
      {"tiny", 4.9e-324}, {"negative", -0.25}, {"max", 1.7976931348623157e308},
      {"small", 1e-4},    {"hundred", 100.0}};
  const std::string text = to_yaml(doc);
  EXPECT_NE(text.find("mean: 0.131\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lr: 5.0e-05\n"), std::string::npos) << text;  // a float to PyYAML too
  EXPECT_NE(text.find("betas: [0.9, 0.999]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("one: 1.0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("big: 1.0e+22\n"), std::string::npos) << text;
  EXPECT_NE(text.find("negative: -0.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("small: 0.0001\n"), std::string::npos) << text;  // as Python's repr
  EXPECT_NE(text.find("hundred: 100.0\n"), std::string::npos) << text;
  const nlohmann::json back = read_back(text);
  EXPECT_EQ(back, doc);
  for (const auto& key : {"third", "tiny", "max"})
    EXPECT_EQ(back.at(key).get<double>(), doc.at(key).get<double>()) << key;
  EXPECT_TRUE(back.at("one").is_number_float());
}

TEST(YamlEmit, ThePluginNameComesFirst) {
  const nlohmann::json doc = {
      {"train_transforms", {{{"p", 0.5}, {"name", "horizontal_flip"}}}},
      {"model", {{"in_chans", 1}, {"backbone", "convnext_small"}, {"num_classes", 10}}}};
  const std::string text = to_yaml(doc);
  EXPECT_NE(text.find("- name: horizontal_flip\n    p: 0.5"), std::string::npos) << text;
  EXPECT_NE(text.find("model:\n  backbone: convnext_small\n  in_chans: 1"), std::string::npos)
      << text;
  EXPECT_EQ(read_back(text), doc);
}

// Text that looks like an interpolation (from --set, or $${env:...} in a file) is printed escaped
// and reads back as itself, whatever the environment holds.
TEST(YamlEmit, EnvironmentReferencesInValuesReadBackAsText) {
  ::setenv("RUNNER_YAML_EMIT_TEST", "from-env", 1);
  const nlohmann::json doc = {{"a", "${env:RUNNER_YAML_EMIT_TEST}"},
                              {"b", "x${env:UNSET_VAR_FOR_TEST:d}y"},
                              {"c", "$${env:RUNNER_YAML_EMIT_TEST}"},
                              {"d", "${env:NO_CLOSE"}};
  const std::string text = to_yaml(doc);
  EXPECT_EQ(read_back(text), doc) << text;
  EXPECT_EQ(read_back("a: ${env:RUNNER_YAML_EMIT_TEST}\n").at("a"), "from-env");
  EXPECT_EQ(read_back("a: $${env:RUNNER_YAML_EMIT_TEST}\n").at("a"),
            "${env:RUNNER_YAML_EMIT_TEST}");
  ::unsetenv("RUNNER_YAML_EMIT_TEST");
}

}  // namespace
}  // namespace runner::config
