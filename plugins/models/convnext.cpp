// ConvNeXt as timm builds it (timm/models/convnext.py), with timm's state_dict names.

#include <torch/torch.h>

#include "depthwise_conv.hpp"
#include "layers.hpp"
#include "models.hpp"
#include "runner/models/compute_copies.hpp"
#include "runner/models/grad_checkpoint.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/layer_decay.hpp"

namespace runner::models {
namespace {

struct ConvNextSpec {
  std::vector<int64_t> depths;
  std::vector<int64_t> dims;
  bool conv_mlp;  // MLP as 1x1 convs on NCHW (atto..nano) or Linear on NHWC (tiny..base)
};

constexpr double kLayerNormEps = 1e-6;
constexpr double kLayerScaleInit = 1e-6;

// dwconv 7x7 -> LayerNorm -> fc1 -> GELU -> fc2 -> * gamma -> drop_path -> + shortcut.
class ConvNextBlockImpl : public torch::nn::Module {
 public:
  ConvNextBlockImpl(int64_t dim, bool conv_mlp, double drop_path_rate)
      : conv_mlp_(conv_mlp), drop_path_rate_(drop_path_rate) {
    // gamma is registered first: timm's state_dict lists it before the block's submodules.
    gamma_ = register_parameter("gamma", torch::full({dim}, kLayerScaleInit));
    conv_dw_ = register_module(
        "conv_dw", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim, 7).padding(3).groups(dim)));
    norm_ = register_module("norm", LayerNorm(dim, kLayerNormEps, /*channels_first=*/conv_mlp));
    auto mlp = register_module("mlp", std::make_shared<torch::nn::Module>());
    if (conv_mlp) {
      fc1_conv_ = mlp->register_module("fc1", torch::nn::Conv2d(dim, 4 * dim, 1));
      fc2_conv_ = mlp->register_module("fc2", torch::nn::Conv2d(4 * dim, dim, 1));
    } else {
      fc1_ = mlp->register_module("fc1", torch::nn::Linear(dim, 4 * dim));
      fc2_ = mlp->register_module("fc2", torch::nn::Linear(4 * dim, dim));
    }
  }

  static torch::Tensor pointwise(const torch::Tensor& x, const torch::nn::Conv2d& conv) {
    return torch::conv2d(x, compute_weight(conv->weight), compute_weight(conv->bias));
  }

  /// model.grad_checkpointing: recompute this block in backward instead of keeping its
  /// activations.
  void set_checkpointing(bool on) { checkpointing_ = on; }

  torch::Tensor forward(torch::Tensor x) {
    if (checkpointing_ && checkpoint_applies(*this))
      return checkpoint(body_, x, parameters(), buffers());
    return compute(x);
  }

 private:
  torch::Tensor compute(torch::Tensor x) {
    torch::Tensor shortcut = x;
    x = depthwise_conv2d(x, conv_dw_->weight, conv_dw_->bias);
    // The MLP holds nearly all the weights: under bf16 autocast it reads their kept bf16 copies.
    if (conv_mlp_) {
      x = pointwise(norm_(x), fc1_conv_);
      x = pointwise(torch::gelu(x), fc2_conv_);
    } else {
      x = x.permute({0, 2, 3, 1});
      x = torch::linear(norm_(x), compute_weight(fc1_->weight), compute_weight(fc1_->bias));
      x = torch::linear(torch::gelu(x), compute_weight(fc2_->weight), compute_weight(fc2_->bias));
      x = x.permute({0, 3, 1, 2});
    }
    x = x.mul(gamma_.reshape({1, -1, 1, 1}));
    return drop_path(x, drop_path_rate_, is_training()) + shortcut;
  }

  bool checkpointing_ = false;
  const CheckpointBody body_ = [this](const torch::Tensor& x) { return compute(x); };
  bool conv_mlp_;
  double drop_path_rate_;
  torch::Tensor gamma_;
  torch::nn::Conv2d conv_dw_{nullptr}, fc1_conv_{nullptr}, fc2_conv_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  LayerNorm norm_{nullptr};
};
TORCH_MODULE(ConvNextBlock);

// An optional downsample (LayerNorm2d + 2x2/s2 conv; stage 0 has none), then the blocks.
class ConvNextStageImpl : public torch::nn::Module {
 public:
  ConvNextStageImpl(int64_t in_dim, int64_t dim, bool conv_mlp, const std::vector<double>& rates) {
    if (in_dim != dim) {
      downsample_ = register_module(
          "downsample", torch::nn::Sequential(
                            LayerNorm(in_dim, kLayerNormEps, true),
                            torch::nn::Conv2d(torch::nn::Conv2dOptions(in_dim, dim, 2).stride(2))));
    }
    blocks_ = register_module("blocks", torch::nn::Sequential());
    for (double rate : rates) blocks_->push_back(ConvNextBlock(dim, conv_mlp, rate));
  }

  torch::Tensor forward(torch::Tensor x) {
    if (downsample_) x = downsample_->forward(x);
    return blocks_->forward(x);
  }

 private:
  torch::nn::Sequential downsample_{nullptr}, blocks_{nullptr};
};
TORCH_MODULE(ConvNextStage);

class ConvNext : public Model, public optim::GroupsLayers {
 public:
  // timm's ConvNeXt.group_matcher(coarse=False): the stem, each stage's downsample with its
  // first block, each block, then the head.
  std::map<std::string, int64_t> layers_of(const std::vector<std::string>& names) const override {
    return optim::layer_ids(names, {{R"(^stem)", {0}, {}},
                                    {R"(^stages\.(\d+)\.downsample)", {1}, {0}},
                                    {R"(^stages\.(\d+)\.blocks\.(\d+))", {1}, {}},
                                    {R"(^norm_pre)", {1}, {optim::kSameLayerAsBefore}}});
  }

  ConvNext(const ConvNextSpec& spec, const ModelOptions& o, double drop_rate)
      : drop_rate_(drop_rate) {
    const auto& dims = spec.dims;
    stem_ = register_module("stem", torch::nn::Sequential());
    stem_->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(o.in_chans, dims[0], 4).stride(4)));
    stem_->push_back(LayerNorm(dims[0], kLayerNormEps, true));

    int64_t total = 0;
    for (int64_t d : spec.depths) total += d;
    std::vector<double> rates = linear_drop_rates(o.drop_path_rate, total);
    stages_ = register_module("stages", torch::nn::Sequential());
    int64_t block_index = 0;
    for (size_t i = 0; i < spec.depths.size(); ++i) {
      std::vector<double> stage_rates(rates.begin() + block_index,
                                      rates.begin() + block_index + spec.depths[i]);
      block_index += spec.depths[i];
      int64_t in_dim = i == 0 ? dims[0] : dims[i - 1];
      stages_->push_back(ConvNextStage(in_dim, dims[i], spec.conv_mlp, stage_rates));
    }

    auto head = register_module("head", std::make_shared<torch::nn::Module>());
    head_norm_ = head->register_module("norm", LayerNorm(dims.back(), kLayerNormEps, true));
    head_fc_ = head->register_module("fc", torch::nn::Linear(dims.back(), o.num_classes));
    init_weights();
  }

  torch::Tensor forward_features(torch::Tensor x) override {
    return stages_->forward(stem_->forward(x));
  }

  torch::Tensor forward_head(torch::Tensor x, bool pre_logits) override {
    // timm's NormMlpClassifierHead: pool, norm, flatten, dropout (drop_rate), fc.
    x = head_norm_(x.mean({2, 3}, /*keepdim=*/true)).flatten(1);
    x = torch::dropout(x, drop_rate_, is_training());
    return pre_logits ? x : head_fc_(x);
  }

  std::string first_conv() const override { return "stem.0"; }
  std::string classifier() const override { return "head.fc"; }

 private:
  // timm's _init_weights: trunc_normal(std .02) for conv/linear weights, zero biases.
  void init_weights() {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* conv = m->as<torch::nn::Conv2d>()) {
        trunc_normal_(conv->weight, 0.02);
        if (conv->bias.defined()) conv->bias.zero_();
      } else if (auto* fc = m->as<torch::nn::Linear>()) {
        trunc_normal_(fc->weight, 0.02);
        fc->bias.zero_();
      }
    }
  }

  torch::nn::Sequential stem_{nullptr}, stages_{nullptr};
  double drop_rate_;
  LayerNorm head_norm_{nullptr};
  torch::nn::Linear head_fc_{nullptr};
};

// The shared keys' extras: timm's drop_rate and grad checkpointing.
nlohmann::json convnext_properties() {
  nlohmann::json properties = drop_rate_property();
  properties.update(grad_checkpointing_property());
  return properties;
}

}  // namespace

void register_convnext(Registry<ModelFactory>& registry) {
  const std::map<std::string, ConvNextSpec> specs = {
      {"convnext_atto", {{2, 2, 6, 2}, {40, 80, 160, 320}, true}},
      {"convnext_femto", {{2, 2, 6, 2}, {48, 96, 192, 384}, true}},
      {"convnext_pico", {{2, 2, 6, 2}, {64, 128, 256, 512}, true}},
      {"convnext_nano", {{2, 2, 8, 2}, {80, 160, 320, 640}, true}},
      {"convnext_tiny", {{3, 3, 9, 3}, {96, 192, 384, 768}, false}},
      {"convnext_small", {{3, 3, 27, 3}, {96, 192, 384, 768}, false}},
      {"convnext_base", {{3, 3, 27, 3}, {128, 256, 512, 1024}, false}},
  };
  for (const auto& [name, spec] : specs) {
    std::string help = "ConvNeXt as timm's " + name + " (depths " + std::to_string(spec.depths[0]) +
                       "," + std::to_string(spec.depths[1]) + "," + std::to_string(spec.depths[2]) +
                       "," + std::to_string(spec.depths[3]) + "; width " +
                       std::to_string(spec.dims[0]) + "..." + std::to_string(spec.dims[3]) + ")";
    registry.add(
        name,
        [spec](const nlohmann::json& params) -> std::shared_ptr<Model> {
          auto model =
              std::make_shared<ConvNext>(spec, model_options_from(params), drop_rate_from(params));
          set_block_checkpointing<ConvNextBlockImpl>(*model,
                                                     params.value("grad_checkpointing", false));
          return model;
        },
        model_params_schema(convnext_properties()), help);
  }
}

}  // namespace runner::models
