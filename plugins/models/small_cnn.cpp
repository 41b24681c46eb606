// small_cnn: a fast CNN for quick CPU runs (not a timm model; named in timm's style).

#include <torch/torch.h>

#include "layers.hpp"
#include "models.hpp"
#include "runner/models/batch_norm.hpp"
#include "runner/models/model.hpp"

namespace runner::models {
namespace {

namespace nn = torch::nn;

// conv3x3 (no bias) + BN + ReLU, the building unit of small_cnn.
class ConvBnActImpl : public nn::Module {
 public:
  ConvBnActImpl(int64_t in, int64_t out, int64_t stride) {
    conv_ = register_module(
        "conv", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    bn_ = register_module("bn", BatchNorm2d(out));
    nn::init::kaiming_normal_(conv_->weight, 0.0, torch::kFanOut, torch::kReLU);
  }
  torch::Tensor forward(torch::Tensor x) { return torch::relu(bn_(conv_(x))); }

 private:
  nn::Conv2d conv_{nullptr};
  BatchNorm2d bn_{nullptr};
};
TORCH_MODULE(ConvBnAct);

// 32 ch at full resolution, 64 at 1/2 and 128 at 1/4 (two layers each), global average pool, fc.
class SmallCnn : public Model {
 public:
  SmallCnn(const ModelOptions& o, double drop_rate) : drop_rate_(drop_rate) {
    features_ =
        register_module("features", nn::Sequential(ConvBnAct(o.in_chans, 32, 1),
                                                   ConvBnAct(32, 64, 2), ConvBnAct(64, 64, 1),
                                                   ConvBnAct(64, 128, 2), ConvBnAct(128, 128, 1)));
    fc_ = register_module("fc", nn::Linear(128, o.num_classes));
  }

  torch::Tensor forward_features(torch::Tensor x) override { return features_->forward(x); }

  // As timm's heads: pool, dropout (drop_rate), then pre_logits' features or the classifier.
  torch::Tensor forward_head(torch::Tensor x, bool pre_logits) override {
    x = torch::dropout(x.mean({2, 3}), drop_rate_, is_training());
    return pre_logits ? x : fc_(x);
  }

  std::string first_conv() const override { return "features.0.conv"; }
  std::string classifier() const override { return "fc"; }

 private:
  double drop_rate_;
  nn::Sequential features_{nullptr};
  nn::Linear fc_{nullptr};
};

// drop_rate as the other native backbones; no drop_path_rate: small_cnn has no residual blocks
// to drop (it used to take drop_path_rate as its dropout: that key now refuses any rate).
nlohmann::json small_cnn_properties() {
  nlohmann::json properties = drop_rate_property();
  properties.update(no_grad_checkpointing_property(
      "small_cnn has no blocks to recompute (and little to save): use convnext_* or resnet* "
      "for grad checkpointing"));
  properties["drop_path_rate"] = {
      {"type", "number"},
      {"minimum", 0},
      {"maximum", 0},
      {"default", 0.0},
      {"description",
       "small_cnn has no residual blocks, so no stochastic depth: only 0. Its classifier dropout "
       "is model.drop_rate (this key was that dropout before)."},
      {"x-runner-hint",
       "small_cnn has no residual blocks to drop; for dropout before its classifier set "
       "model.drop_rate"}};
  return model_params_schema(properties);
}

}  // namespace

void register_small_cnn(Registry<ModelFactory>& registry) {
  registry.add(
      "small_cnn",
      [](const nlohmann::json& params) -> std::shared_ptr<Model> {
        return std::make_shared<SmallCnn>(model_options_from(params), drop_rate_from(params));
      },
      small_cnn_properties(),
      "5 conv-BN-ReLU layers (32-64-64-128-128 ch, two stride-2) + avg pool + fc: quick CPU runs");
}

}  // namespace runner::models
