// Where a YAML syntax error is reported: a flow collection left open is named where it opened,
// not where the parser noticed (lines later); other errors keep the parser's position.

#include <string>

#include <gtest/gtest.h>

#include "config/source_map.hpp"
#include "config/yaml_json.hpp"
#include "runner/error.hpp"

namespace runner::config {
namespace {

std::string syntax_error(const std::string& text) {
  SourceMap marks;
  try {
    parse_yaml(text, "exp.yaml", marks);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(YamlSyntaxError, AnUnclosedBraceIsReportedWhereItOpened) {
  const std::string error = syntax_error(
      "name: x\n"
      "data:\n"
      "  train_transforms:\n"
      "    - {name: horizontal_flip, p: 0.5\n"
      "    - {name: normalize, mean: 0.5, std: 0.25}\n"
      "  eval_transforms: []\n");
  EXPECT_EQ(error.rfind("exp.yaml:4:7: YAML syntax error: this '{' is not closed (add '}'", 0), 0)
      << error;
}

TEST(YamlSyntaxError, AnUnclosedBracketAtTheEndIsReportedWhereItOpened) {
  const std::string error = syntax_error("name: x\nmetrics: [accuracy, loss\n");
  EXPECT_EQ(error.rfind("exp.yaml:2:10: YAML syntax error: this '[' is not closed (add ']'", 0), 0)
      << error;
}

TEST(YamlSyntaxError, FlowCollectionsOverSeveralLinesQuotesAndCommentsAreNotMistakes) {
  SourceMap marks;
  const auto doc = parse_yaml(
      "name: \"a{b\"  # a { in a comment\n"
      "model: {backbone: small_cnn,\n"
      "        in_chans: 1, num_classes: 10}\n"
      "note: 'x [ y'\n",
      "exp.yaml", marks);
  EXPECT_EQ(doc.at("model").at("in_chans"), 1);
  // An error with no flow collection open keeps the parser's position.
  const std::string error = syntax_error("name: \"a{b\"\nmodel: {backbone: x}\n  x: 1\n");
  EXPECT_EQ(error.rfind("exp.yaml:3:3: YAML syntax error: ", 0), 0) << error;
  EXPECT_EQ(error.find("is not closed"), std::string::npos) << error;
}

}  // namespace
}  // namespace runner::config
