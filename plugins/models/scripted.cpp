// Backbones `timm/<name>` (any timm model, scripted by timm in Python once and cached) and
// `torchscript` (a user's scripted module): a TorchScript module run by libtorch's interpreter,
// its parameters and buffers mirrored into torch::nn::Modules under the module's own names, so
// that optimizers, DDP, checkpoints, export and train/eval see a plain model with timm's names.

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <torch/script.h>
#include <torch/torch.h>

#include "models/models.hpp"
#include "runner/error.hpp"
#include "runner/models/model.hpp"
#include "runner/models/timm_import.hpp"
#include "runner/optim/layer_decay.hpp"
#include "scripted_kernels.hpp"

namespace runner::models {
namespace {

/// One submodule of the script: its own parameters and buffers (the same tensors the script
/// uses, so a step, a device move or a checkpoint load reaches both), named after its class so
/// that a layer's kind shows (e.g. __torch__.timm.layers.norm_act.BatchNormAct2d).
class ScriptedPart : public torch::nn::Module {
 public:
  ScriptedPart(const torch::jit::Module& part, const std::string& prefix,
               const std::set<std::string>& left_out)
      : torch::nn::Module(type_name(part)), part_(part) {
    mirror(part, *this, prefix, left_out);
  }

  /// The script's own submodule follows: model.freeze keeps a frozen BatchNorm in eval mode
  /// through its mirror.
  void train(bool on = true) override {
    torch::nn::Module::train(on);
    part_.train(on);
  }

  static std::string type_name(const torch::jit::Module& part) {
    return part.type()->name() ? part.type()->name()->qualifiedName() : "ScriptedPart";
  }

  /// Registers `from`'s own parameters and buffers in `into`, and a part per child, except the
  /// buffers named in `left_out` (full names: timm's non-persistent buffers, not in its
  /// state_dict).
  static void mirror(const torch::jit::Module& from, torch::nn::Module& into,
                     const std::string& prefix, const std::set<std::string>& left_out) {
    for (const auto& p : from.named_parameters(/*recurse=*/false))
      into.register_parameter(p.name, p.value, p.value.requires_grad());
    for (const auto& b : from.named_buffers(/*recurse=*/false))
      if (b.value.defined() && left_out.count(prefix + b.name) == 0)
        into.register_buffer(b.name, b.value);
    for (const auto& c : from.named_children())
      into.register_module(
          c.name, std::make_shared<ScriptedPart>(c.value, prefix + c.name + ".", left_out));
  }

 private:
  torch::jit::Module part_;
};

class ScriptedModel : public Model, public optim::GroupsLayers {
 public:
  ScriptedModel(torch::jit::Module script, std::string first_conv, std::string classifier,
                const std::set<std::string>& left_out, std::map<std::string, int64_t> layers)
      : script_(std::move(script)),
        first_conv_(std::move(first_conv)),
        classifier_(std::move(classifier)),
        layers_(std::move(layers)) {
    ScriptedPart::mirror(script_, *this, "", left_out);
    train(true);
  }

  // The script's tensors move in place (set_data), so the mirrored ones, which are the same
  // tensors, move with them; so do the buffers left out of the mirror.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override {
    script_.to(device, dtype, non_blocking);
  }
  void to(torch::Dtype dtype, bool non_blocking = false) override {
    script_.to(dtype, non_blocking);
  }
  void to(torch::Device device, bool non_blocking = false) override {
    script_.to(device, non_blocking);
  }

  torch::Tensor forward(torch::Tensor x) override { return script_.forward({x}).toTensor(); }

  torch::Tensor forward_features(torch::Tensor x) override {
    return method("forward_features")({x}).toTensor();
  }

  torch::Tensor forward_head(torch::Tensor x, bool pre_logits) override {
    return method("forward_head")({x, pre_logits}).toTensor();
  }

  /// Dropout, drop path and BatchNorm statistics follow the script's own training flag.
  void train(bool on = true) override {
    torch::nn::Module::train(on);
    script_.train(on);
  }

  std::string first_conv() const override { return first_conv_; }
  std::string classifier() const override { return classifier_; }

  /// What timm's param_groups_layer_decay found at the import (the description's "layers", over
  /// all of timm's parameters, so that the last layer is timm's layer_max).
  std::map<std::string, int64_t> layers_of(const std::vector<std::string>&) const override {
    if (layers_.empty())
      throw ConfigError(
          "optimizer.layer_decay: the TorchScript model " + name() +
          " has no layer grouping (a timm/<name> backbone records timm's at its import; a "
          "torchscript file needs \"layers\": {parameter: layer} in FILE.json): remove "
          "layer_decay or give it one");
    return layers_;
  }

 private:
  torch::jit::Method method(const std::string& name) {
    if (auto found = script_.find_method(name)) return *found;
    throw Error("the TorchScript model " + this->name() + " has no method " + name +
                " (timm models have it; a user's module needs it scripted or exported)");
  }

  torch::jit::Module script_;
  std::string first_conv_, classifier_;
  std::map<std::string, int64_t> layers_;
};

nlohmann::json read_description(const std::string& path) {
  std::ifstream in(path + ".json");
  if (!in) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(path +
                    ".json: not the JSON description runner writes beside a scripted "
                    "model (" +
                    std::string(e.what()) + "): delete both files to import again");
  }
}

/// The module at `path`, with what its description (PATH.json, when runner import wrote one)
/// says: its first conv, its classifier and the buffers to leave out of the state dict.
std::shared_ptr<Model> load_scripted(const std::string& path) {
  const nlohmann::json about = read_description(path);
  auto text = [&about](const char* key) {
    return about.contains(key) && about[key].is_string() ? about[key].get<std::string>()
                                                         : std::string();
  };
  std::set<std::string> left_out;
  if (about.contains("non_persistent_buffers") && about["non_persistent_buffers"].is_array())
    for (const auto& name : about["non_persistent_buffers"])
      left_out.insert(name.get<std::string>());
  std::map<std::string, int64_t> layers;
  if (about.contains("layers") && about["layers"].is_object())
    for (const auto& [name, layer] : about["layers"].items())
      if (layer.is_number_integer()) layers[name] = layer.get<int64_t>();
  torch::jit::Module script;
  try {
    script = torch::jit::load(path);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw DataError(path + " is not a TorchScript module libtorch can load (" +
                    what.substr(0, what.find('\n')) +
                    "): write it with torch.jit.script(model).save(path)");
  }
  use_runner_kernels(script);
  return std::make_shared<ScriptedModel>(std::move(script), text("first_conv"), text("classifier"),
                                         left_out, std::move(layers));
}

nlohmann::json scripted_params_schema() {
  return model_params_schema(
      {{"kwargs",
        {{"type", "object"},
         {"default", nlohmann::json::object()},
         {"description",
          "More timm.create_model arguments, e.g. {img_size: 56} for a vit: part of the cached "
          "model's key."}}},
       {"grad_checkpointing",
        {{"type", "boolean"},
         {"enum", {false}},
         {"default", false},
         {"description",
          "Not for timm/<name>: it runs as TorchScript, which cannot recompute in backward "
          "(timm's set_grad_checkpointing does not script)."},
         {"x-runner-hint",
          "timm/<name> runs as TorchScript, which cannot recompute in backward (timm's "
          "set_grad_checkpointing does not script): use a native convnext_* or resnet* for it"}}},
       {"drop_rate",
        {{"type", "number"},
         {"minimum", 0},
         {"maximum", 1},
         {"default", 0.0},
         {"description",
          "timm.create_model's drop_rate (train.py's --drop): the classifier dropout of the "
          "model timm builds (not beside model.kwargs.drop_rate). 0: none."}}},
       {"pretrained",
        {{"type", {"boolean", "string"}},
         {"default", false},
         {"description",
          "Start from timm's weights, loaded by timm.create_model(pretrained=True) at import: "
          "true (timm's default tag), hf-hub:timm/<name>.<tag>, or a weights file (relative to "
          "the experiment file); offline, from the Hugging Face cache. timm adapts the first "
          "conv to in_chans and re-initialises a classifier of another size."}}}});
}

}  // namespace

void register_scripted(Registry<ModelFactory>& registry) {
  registry.add(
      "timm/*",
      [](const nlohmann::json& params) -> std::shared_ptr<Model> {
        const std::string path = timm_cached_or_imported(timm_request_from(params));
        return load_scripted(path);
      },
      scripted_params_schema(),
      "Any timm model by name (timm/efficientnet_b0, ...): built and scripted by timm in the "
      "project's Python once (runner import), cached in $RUNNER_CACHE, trained by libtorch; "
      "names runner has natively (convnext_*, resnet*) are native unless written timm/<name>");
  registry.add(
      "torchscript",
      [](const nlohmann::json& params) -> std::shared_ptr<Model> {
        const std::string path = params.at("path").get<std::string>();
        return load_scripted(path);
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"required", {"path"}},
       {"properties",
        {{"path",
          {{"type", "string"},
           {"description",
            "A module saved by torch.jit.script(model).save(path), or written by runner import "
            "-o (relative to the experiment file): its weights are the start; it takes images "
            "[N, C, H, W] and returns logits."}}}}}},
      "A TorchScript module from a file (torch.jit.script(model).save): trained as it is");
}

}  // namespace runner::models
