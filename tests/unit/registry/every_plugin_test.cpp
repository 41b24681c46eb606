// One test over every registered plugin, so a new plugin is checked the day it is added: its
// schema is a closed, documented draft-07 schema whose defaults are valid, its help is there, and
// its factory builds an object from the defaults alone wherever no parameter is required.

#include <gtest/gtest.h>

#include "config/config_issue.hpp"
#include "config/pretrained_source.hpp"
#include "config/schema_validator.hpp"
#include "runner/data/dataset.hpp"
#include "runner/data/transform.hpp"
#include "runner/losses/loss.hpp"
#include "runner/metrics/metric.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/optim/scheduler.hpp"
#include "runner/registries.hpp"

namespace runner {
namespace {

using nlohmann::json;

// The defaults of `schema` applied to {}, and whether that satisfies the schema.
bool defaults_are_enough(const json& schema, json& params) {
  params = json::object();
  config::apply_schema_defaults(params, schema);
  std::vector<config::ConfigIssue> issues;
  config::validate_against_schema(params, schema, config::SourceMap(), "", issues);
  return issues.empty();
}

template <class Factory>
void check_entries(const Registry<Factory>& registry, size_t minimum) {
  EXPECT_GE(registry.entries().size(), minimum) << registry.kind();
  for (const auto& [name, entry] : registry.entries()) {
    SCOPED_TRACE(registry.kind() + "/" + name);
    EXPECT_FALSE(entry.help.empty());
    const json& s = entry.schema;
    ASSERT_TRUE(s.is_object());
    EXPECT_EQ(s.value("type", ""), "object");
    ASSERT_TRUE(s.contains("additionalProperties"));
    EXPECT_EQ(s.at("additionalProperties"), false) << "unknown keys must be errors";
    const json props = s.value("properties", json::object());
    const json required = s.value("required", json::array());
    for (auto it = props.begin(); it != props.end(); ++it) {
      EXPECT_TRUE(it.value().contains("description")) << it.key() << " has no description";
      const bool is_required =
          std::find(required.begin(), required.end(), it.key()) != required.end();
      EXPECT_TRUE(is_required || it.value().contains("default"))
          << it.key() << " is optional without a default";
    }
    // An unknown key is rejected with a suggestion-capable message.
    json bad = {{"surely_not_a_parameter", 1}};
    std::vector<config::ConfigIssue> issues;
    config::validate_against_schema(bad, s, config::SourceMap(), "", issues);
    EXPECT_FALSE(issues.empty());
  }
}

TEST(EveryPlugin, SchemasAreClosedDocumentedAndDefaulted) {
  const Registries& r = registries();
  check_entries(r.datasets, 4);
  check_entries(r.transforms, 9);
  check_entries(r.models, 14);
  check_entries(r.optimizers, 3);
  check_entries(r.schedulers, 4);
  check_entries(r.losses, 1);
  check_entries(r.metrics, 4);
}

TEST(EveryPlugin, FactoriesBuildFromDefaults) {
  const Registries& r = registries();
  json params;
  for (const auto& [name, e] : r.transforms.entries()) {
    SCOPED_TRACE("transforms/" + name);
    if (!defaults_are_enough(e.schema, params)) continue;  // e.g. resize needs a size
    auto t = e.factory(params);
    ASSERT_TRUE(t);
    cv::Mat image(8, 6, CV_8UC3, cv::Scalar(100, 50, 200));  // normalize defaults to RGB stats
    // random_erasing erases normalized float images (timm's order): it refuses these bytes.
    if (name == "random_erasing") image.convertTo(image, CV_32FC3, 1.0 / 255);
    data::Rng rng(1, 0, 0);
    t->apply(image, rng);
    EXPECT_FALSE(image.empty());
  }
  for (const auto& [name, e] : r.losses.entries()) {
    SCOPED_TRACE("losses/" + name);
    ASSERT_TRUE(defaults_are_enough(e.schema, params));
    const auto loss = e.factory(params)->compute(torch::randn({4, 3}), torch::tensor({0, 1, 2, 1}));
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
  }
  for (const auto& [name, e] : r.metrics.entries()) {
    SCOPED_TRACE("metrics/" + name);
    ASSERT_TRUE(defaults_are_enough(e.schema, params));
    const auto m = e.factory(params);
    EXPECT_FALSE(m->name().empty());
    EXPECT_TRUE(m->mode() == "max" || m->mode() == "min");
  }
  torch::nn::Linear tiny(3, 2);
  for (const auto& [name, e] : r.optimizers.entries()) {
    SCOPED_TRACE("optimizers/" + name);
    ASSERT_TRUE(defaults_are_enough(e.schema, params));
    EXPECT_TRUE(e.factory(params, *tiny));
  }
  for (const auto& [name, e] : r.schedulers.entries()) {
    SCOPED_TRACE("schedulers/" + name);
    ASSERT_TRUE(defaults_are_enough(e.schema, params));
    optim::ScheduleContext context;
    context.base_lr = 0.1;
    context.total_steps = 100;
    context.steps_per_epoch = 10;
    auto s = e.factory(params, context);
    for (int64_t step : {0, 50, 99}) EXPECT_GE(s->lr_at(step), 0.0);
  }
  for (const auto& [name, e] : r.models.entries()) {
    // timm/* and torchscript need timm or a file: tests/integration/timm_scripted_test.py.
    if (runner::config::is_scripted_backbone(name)) continue;
    SCOPED_TRACE("models/" + name);
    ASSERT_TRUE(defaults_are_enough(e.schema, params));
    params["backbone"] = name;
    params["num_classes"] = 5;  // keeps the classifier small; everything else from defaults
    auto model = e.factory(params);
    ASSERT_TRUE(model);
    EXPECT_FALSE(model->first_conv().empty());
    EXPECT_FALSE(model->classifier().empty());
  }
  for (const auto& [name, e] : r.datasets.entries()) {
    SCOPED_TRACE("datasets/" + name);
    if (!defaults_are_enough(e.schema, params)) continue;  // kaggle_csv, image_folder need a root
    data::DatasetContext context;
    const auto splits = e.factory(params, context);
    ASSERT_TRUE(splits.train);
    EXPECT_GT(splits.train->size(), 0u);
  }
}

}  // namespace
}  // namespace runner
