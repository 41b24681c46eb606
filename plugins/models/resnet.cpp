// ResNet as timm builds it (timm/models/resnet.py), with timm's state_dict names.

#include <torch/torch.h>

#include "layers.hpp"
#include "max_pool.hpp"
#include "models.hpp"
#include "runner/models/batch_norm.hpp"
#include "runner/models/grad_checkpoint.hpp"
#include "runner/models/model.hpp"
#include "runner/optim/layer_decay.hpp"
#include "small_output_conv.hpp"

namespace runner::models {
namespace {

namespace nn = torch::nn;

struct ResNetSpec {
  bool bottleneck;              // Bottleneck (expansion 4) or BasicBlock (expansion 1)
  std::vector<int64_t> layers;  // blocks per stage
  bool deep_tiered;             // `t` variants: stem 24/32/64 of 3x3 convs and avg_down
};

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// Syncable, so that train.bn_sync: sync can take statistics over the global batch.
BatchNorm2d bn(int64_t c) { return BatchNorm2d(c); }

// Shortcut projection: avg_down = AvgPool (or Identity at stride 1) + conv1x1 + BN;
// otherwise a strided conv1x1 + BN.
nn::Sequential make_downsample(int64_t in, int64_t out, int64_t stride, bool avg_down) {
  if (!avg_down) return nn::Sequential(conv(in, out, 1, stride), bn(out));
  nn::Sequential s;
  if (stride == 1)
    s->push_back(nn::Identity());
  else
    s->push_back(nn::AvgPool2d(
        nn::AvgPool2dOptions(2).stride(stride).ceil_mode(true).count_include_pad(false)));
  s->push_back(conv(in, out, 1));
  s->push_back(bn(out));
  return s;
}

class BlockImpl : public nn::Module {
 public:
  BlockImpl(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride,
            nn::Sequential downsample, double drop_path_rate)
      : bottleneck_(bottleneck), drop_path_rate_(drop_path_rate) {
    if (bottleneck) {
      conv1_ = register_module("conv1", conv(inplanes, planes, 1));
      bn1_ = register_module("bn1", bn(planes));
      conv2_ = register_module("conv2", conv(planes, planes, 3, stride));
      bn2_ = register_module("bn2", bn(planes));
      conv3_ = register_module("conv3", conv(planes, planes * 4, 1));
      bn3_ = register_module("bn3", bn(planes * 4));
    } else {
      conv1_ = register_module("conv1", conv(inplanes, planes, 3, stride));
      bn1_ = register_module("bn1", bn(planes));
      conv2_ = register_module("conv2", conv(planes, planes, 3));
      bn2_ = register_module("bn2", bn(planes));
    }
    if (downsample) downsample_ = register_module("downsample", downsample);
  }

  /// model.grad_checkpointing: recompute this block in backward instead of keeping its
  /// activations.
  void set_checkpointing(bool on) { checkpointing_ = on; }

  torch::Tensor forward(torch::Tensor x) {
    if (checkpointing_ && checkpoint_applies(*this))
      return checkpoint(body_, x, parameters(), buffers());
    return compute(x);
  }

  torch::Tensor compute(torch::Tensor x) {
    torch::Tensor shortcut = downsample_ ? downsample(x) : x;
    x = bn1_->forward_relu(conv2d(*conv1_, x));
    x = bottleneck_ ? bn2_->forward_relu(conv2d(*conv2_, x)) : bn2_(conv2d(*conv2_, x));
    if (bottleneck_) x = bn3_(conv2d(*conv3_, x));
    return torch::relu(drop_path(x, drop_path_rate_, is_training()) + shortcut);
  }

  // The shortcut's layers in order, its convolution through conv2d (the GEMM form at small
  // outputs).
  torch::Tensor downsample(torch::Tensor x) {
    for (auto& layer : *downsample_) {
      if (const auto* c = layer.ptr()->as<nn::Conv2d>())
        x = conv2d(*c, x);
      else
        x = layer.forward(x);
    }
    return x;
  }

  /// timm's zero_init_last: the residual branch starts as zero, each block as the identity.
  void zero_init_last() {
    torch::NoGradGuard no_grad;
    (bottleneck_ ? bn3_ : bn2_)->weight.zero_();
  }

 private:
  bool checkpointing_ = false;
  const CheckpointBody body_ = [this](const torch::Tensor& x) { return compute(x); };
  bool bottleneck_;
  double drop_path_rate_;
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(Block);

class ResNet : public Model, public optim::GroupsLayers {
 public:
  // timm's ResNet.group_matcher(coarse=False): the stem, each block, then the head.
  std::map<std::string, int64_t> layers_of(const std::vector<std::string>& names) const override {
    return optim::layer_ids(
        names, {{R"(^conv1|bn1|maxpool)", {0}, {}}, {R"(^layer(\d+)\.(\d+))", {1}, {}}});
  }

  ResNet(const ResNetSpec& spec, const ModelOptions& o, bool zero_init_last, double drop_rate)
      : deep_(spec.deep_tiered), drop_rate_(drop_rate) {
    const int64_t expansion = spec.bottleneck ? 4 : 1;
    int64_t inplanes = 64;
    if (deep_) {
      // stem_width 32, 'deep_tiered': 3 * (32 / 4) = 24, then 32, then 64.
      stem_ = register_module(
          "conv1", nn::Sequential(conv(o.in_chans, 24, 3, 2), bn(24), nn::ReLU(), conv(24, 32, 3),
                                  bn(32), nn::ReLU(), conv(32, inplanes, 3)));
    } else {
      conv1_ = register_module("conv1", conv(o.in_chans, inplanes, 7, 2));
    }
    bn1_ = register_module("bn1", bn(inplanes));

    int64_t total = 0;
    for (int64_t n : spec.layers) total += n;
    std::vector<double> rates = linear_drop_rates(o.drop_path_rate, total);
    int64_t block_index = 0;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      const int64_t planes = 64 << i;
      const int64_t stride = i == 0 ? 1 : 2;
      nn::Sequential layer;
      for (int64_t b = 0; b < spec.layers[i]; ++b) {
        const int64_t s = b == 0 ? stride : 1;
        nn::Sequential downsample{nullptr};
        if (b == 0 && (stride != 1 || inplanes != planes * expansion))
          downsample = make_downsample(inplanes, planes * expansion, s, spec.deep_tiered);
        Block block(spec.bottleneck, inplanes, planes, s, downsample, rates[block_index++]);
        blocks_.push_back(block);
        layer->push_back(block);
        inplanes = planes * expansion;
      }
      layers_.push_back(register_module("layer" + std::to_string(i + 1), layer));
    }
    fc_ = register_module("fc", nn::Linear(inplanes, o.num_classes));
    init_weights(zero_init_last);
  }

  torch::Tensor forward_features(torch::Tensor x) override {
    x = deep_ ? stem_->forward(x) : conv2d(*conv1_, x);
    x = max_pool_3x3_s2(bn1_->forward_relu(x));
    for (auto& layer : layers_) x = layer->forward(x);
    return x;
  }

  // timm's ResNet.forward_head: pool, dropout (drop_rate), fc.
  torch::Tensor forward_head(torch::Tensor x, bool pre_logits) override {
    x = torch::dropout(x.mean({2, 3}), drop_rate_, is_training());
    return pre_logits ? x : fc_(x);
  }

  std::string first_conv() const override { return deep_ ? "conv1.0" : "conv1"; }
  std::string classifier() const override { return "fc"; }

 private:
  // timm's init_weights: kaiming_normal(fan_out, relu) convs, BN 1/0, the Linear keeps
  // PyTorch's default init, and (timm's default) zero_init_last on every block.
  void init_weights(bool zero_init_last) {
    torch::NoGradGuard no_grad;
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>())
        nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    }
    if (zero_init_last)
      for (auto& block : blocks_) block->zero_init_last();
  }

  bool deep_;
  double drop_rate_;
  nn::Sequential stem_{nullptr};
  nn::Conv2d conv1_{nullptr};
  BatchNorm2d bn1_{nullptr};
  std::vector<nn::Sequential> layers_;
  std::vector<Block> blocks_;
  nn::Linear fc_{nullptr};
};

// The shared keys' extras: timm's drop_rate, grad checkpointing and zero_init_last.
nlohmann::json resnet_properties() {
  nlohmann::json properties = drop_rate_property();
  properties.update(grad_checkpointing_property());
  properties["zero_init_last"] = {
      {"type", "boolean"},
      {"default", true},
      {"description",
       "timm's zero_init_last: each residual block's last BatchNorm starts with weight 0, so "
       "every block starts as the identity. false: weight 1, as torchvision's resnets start."}};
  return properties;
}

}  // namespace

void register_resnet(Registry<ModelFactory>& registry) {
  const std::map<std::string, ResNetSpec> specs = {
      {"resnet10t", {false, {1, 1, 1, 1}, true}}, {"resnet14t", {true, {1, 1, 1, 1}, true}},
      {"resnet18", {false, {2, 2, 2, 2}, false}}, {"resnet26", {true, {2, 2, 2, 2}, false}},
      {"resnet34", {false, {3, 4, 6, 3}, false}}, {"resnet50", {true, {3, 4, 6, 3}, false}},
  };
  for (const auto& [name, spec] : specs) {
    std::string help = std::string("ResNet as timm's ") + name + " (" +
                       (spec.bottleneck ? "bottleneck" : "basic") + " blocks" +
                       (spec.deep_tiered ? ", deep tiered stem, avg-pool downsampling" : "") + ")";
    registry.add(
        name,
        [spec](const nlohmann::json& params) -> std::shared_ptr<Model> {
          auto model = std::make_shared<ResNet>(spec, model_options_from(params),
                                                params.value("zero_init_last", true),
                                                drop_rate_from(params));
          set_block_checkpointing<BlockImpl>(*model, params.value("grad_checkpointing", false));
          return model;
        },
        model_params_schema(resnet_properties()), help);
  }
}

}  // namespace runner::models
