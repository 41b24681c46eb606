// The optimizers' parameter groups against timm's own param_groups_weight_decay (adamw's and
// sgd's default weight_decay_exclude [bias, norm]) and param_groups_layer_decay (layer_decay)
// on the native convnext and resnets: the same weight decay and lr scale for every parameter.

#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plugin_params.hpp"
#include "recipe/recipe_refs.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/optimizer.hpp"
#include "runner/registries.hpp"

namespace {

// name -> (weight decay, lr / the optimizer's configured lr) of each parameter.
std::map<std::string, std::pair<double, double>> groups_of(const std::string& model_name,
                                                           const nlohmann::json& optimizer) {
  const auto& r = runner::registries();
  const auto& entry = r.models.at(model_name);
  auto model = entry.factory(
      runner::test::with_defaults(entry.schema, {{"in_chans", 1}, {"num_classes", 10}}));
  const auto& adamw = r.optimizers.at("adamw");
  auto made = adamw.factory(runner::test::with_defaults(adamw.schema, optimizer), *model);
  std::map<const void*, std::string> name_of;
  for (const auto& p : model->named_parameters())
    name_of[p.value().unsafeGetTensorImpl()] = p.key();
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& group : made->torch_optimizer().param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (const auto& p : group.params())
      out[name_of.at(p.unsafeGetTensorImpl())] = {o.weight_decay(), o.lr() / 1.0};
  }
  return out;
}

TEST(ParamGroupsParity, WeightDecayGroupsAndLayerDecayEqualTimms) {
  if (runner::test::recipe_refs_dir().empty())
    GTEST_SKIP() << "RUNNER_RECIPE_REFS is unset: run through ctest";
  std::ifstream in(runner::test::recipe_refs_dir() + "/manifest.json");
  ASSERT_TRUE(in);
  const auto refs = nlohmann::json::parse(in)["groups"];
  ASSERT_EQ(refs.size(), 3u);
  for (const auto& [model_name, table] : refs.items()) {
    SCOPED_TRACE(model_name);
    const auto plain = groups_of(model_name, {{"lr", 1.0}, {"weight_decay", 0.05}});
    const auto layered =
        groups_of(model_name, {{"lr", 1.0}, {"weight_decay", 0.05}, {"layer_decay", 0.75}});
    ASSERT_EQ(plain.size(), table.size()) << "parameters: runner's and timm's differ in number";
    int scaled = 0;
    for (const auto& [name, values] : table.items()) {
      ASSERT_TRUE(plain.count(name)) << name;
      EXPECT_EQ(plain.at(name).first, values[0].get<double>()) << name;
      EXPECT_EQ(plain.at(name).second, 1.0) << name;
      EXPECT_EQ(layered.at(name).first, values[2].get<double>()) << name;
      EXPECT_NEAR(layered.at(name).second, values[1].get<double>(), 1e-12) << name;
      scaled += values[1].get<double>() < 1.0;
    }
    EXPECT_GT(scaled, 10) << "the layers should have other lr scales";
  }
}

}  // namespace
