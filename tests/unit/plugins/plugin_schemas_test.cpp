// Every optimizer, scheduler, loss and metric: a closed schema whose properties all say what
// they do and have defaults, and a factory that accepts those defaults.

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "plugin_params.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/optim/scheduler.hpp"
#include "runner/registries.hpp"

namespace {

/// Whether `document` satisfies the draft-07 `schema` (valijson, as the core validates).
bool satisfies(const nlohmann::json& schema, const nlohmann::json& document) {
  valijson::Schema parsed;
  valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema);
  parser.populateSchema(schema_adapter, parsed);
  valijson::Validator validator;
  valijson::adapters::NlohmannJsonAdapter document_adapter(document);
  return validator.validate(parsed, document_adapter, nullptr);
}

template <class Registry>
void expect_documented_schemas(const Registry& registry) {
  ASSERT_FALSE(registry.names().empty()) << registry.kind();
  for (const auto& [name, entry] : registry.entries()) {
    const auto& schema = entry.schema;
    EXPECT_EQ(schema.at("type"), "object") << name;
    EXPECT_EQ(schema.at("additionalProperties"), false) << name;
    EXPECT_FALSE(entry.help.empty()) << name;
    for (const auto& [key, property] : schema.at("properties").items()) {
      EXPECT_TRUE(property.contains("description")) << name << "." << key;
      EXPECT_TRUE(property.contains("default")) << name << "." << key;
    }
    EXPECT_TRUE(satisfies(schema, runner::test::with_defaults(schema))) << name << " defaults";
    EXPECT_FALSE(satisfies(schema, {{"no_such_key", 1}})) << name << " accepts unknown keys";
  }
}

TEST(PluginSchemas, EveryEngineSidePluginIsDocumentedAndDefaulted) {
  auto& r = runner::registries();
  expect_documented_schemas(r.optimizers);
  expect_documented_schemas(r.schedulers);
  expect_documented_schemas(r.losses);
  expect_documented_schemas(r.metrics);
}

TEST(PluginSchemas, BadValuesAreRejectedBeforeAnyFactoryRuns) {
  auto& r = runner::registries();
  EXPECT_FALSE(satisfies(r.schedulers.at("step").schema, {{"unit", "epochs"}}));
  EXPECT_FALSE(satisfies(r.optimizers.at("adam").schema, {{"betas", {0.9}}}));
  EXPECT_FALSE(satisfies(r.optimizers.at("sgd").schema, {{"lr", 0}}));
  EXPECT_FALSE(satisfies(r.losses.at("cross_entropy").schema, {{"label_smoothing", 1.5}}));
  EXPECT_FALSE(satisfies(r.metrics.at("top_k").schema, {{"k", 0}}));
  EXPECT_TRUE(satisfies(r.metrics.at("top_k").schema, {{"k", 3}}));
}

TEST(PluginSchemas, EveryFactoryWorksWithItsDefaults) {
  auto& r = runner::registries();
  torch::nn::Linear model(3, 2);
  for (const auto& [name, entry] : r.optimizers.entries())
    EXPECT_NE(entry.factory(runner::test::with_defaults(entry.schema), *model), nullptr) << name;
  runner::optim::ScheduleContext context;
  context.base_lr = 0.1;
  context.total_steps = 20;
  context.steps_per_epoch = 5;
  for (const auto& [name, entry] : r.schedulers.entries())
    EXPECT_DOUBLE_EQ(entry.factory(runner::test::with_defaults(entry.schema), context)->lr_at(0),
                     name == "onecycle" ? 0.1 / 25 : 0.1)
        << name;
  const auto logits = torch::randn({6, 4});
  const auto labels = torch::tensor({0, 1, 2, 3, 0, 1});
  for (const auto& [name, entry] : r.losses.entries())
    EXPECT_TRUE(std::isfinite(entry.factory(runner::test::with_defaults(entry.schema))
                                  ->compute(logits, labels)
                                  .item<double>()))
        << name;
  // The multi-label metrics take multi-hot targets (task: multilabel), the others labels.
  const auto multi_hot = torch::one_hot(labels, 4).to(torch::kFloat);
  for (const auto& [name, entry] : r.metrics.entries()) {
    const bool multilabel_only = name == "map" || name == "micro_f1";
    EXPECT_TRUE(std::isfinite(entry.factory(runner::test::with_defaults(entry.schema))
                                  ->compute(logits, multilabel_only ? multi_hot : labels)))
        << name;
  }
}

}  // namespace
