// `cross_entropy`: torch's cross_entropy with label smoothing and class weights, in float32;
// with class probabilities as targets (train.mixup) it is timm's SoftTargetCrossEntropy,
// -sum(p * log_softmax(logits)) averaged over the batch.

#include <string>
#include <vector>

#include <torch/torch.h>

#include "losses/cross_entropy.hpp"
#include "runner/error.hpp"
#include "runner/losses/loss.hpp"

namespace runner::losses {

namespace {

class CrossEntropyLoss final : public Loss, public TakesSoftTargets {
 public:
  CrossEntropyLoss(double label_smoothing, std::vector<double> weight)
      : label_smoothing_(label_smoothing), weight_values_(std::move(weight)) {}

  torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) override {
    if (logits.dim() != 2)
      throw Error("loss.cross_entropy: expected logits [N, C], got " +
                  std::to_string(logits.dim()) + " dimensions");
    // fp16/bf16 logits from autocast: softmax and the sum are taken in float32.
    const torch::Tensor wide = logits.to(torch::kFloat);
    if (targets.is_floating_point() && targets.sizes() != logits.sizes())
      throw Error("loss.cross_entropy: soft targets of shape " + c10::str(targets.sizes()) +
                  " for logits of shape " + c10::str(logits.sizes()));
    auto options =
        torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(label_smoothing_);
    if (!weight_values_.empty()) {
      if (static_cast<int64_t>(weight_values_.size()) != logits.size(1))
        throw ConfigError("loss.weight: " + std::to_string(weight_values_.size()) +
                          " class weights for a model with " + std::to_string(logits.size(1)) +
                          " classes: give one weight per class");
      if (!weight_.defined() || weight_.device() != logits.device())
        weight_ = torch::tensor(weight_values_, torch::kFloat).to(logits.device());
      options.weight(weight_);
    }
    return torch::nn::functional::cross_entropy(wide, targets, options);
  }

 private:
  double label_smoothing_;
  std::vector<double> weight_values_;
  torch::Tensor weight_;  // weight_values_ on the logits' device, made on first use
};

}  // namespace

void add_cross_entropy_loss(Registry<LossFactory>& registry) {
  nlohmann::json schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"label_smoothing",
         {{"type", "number"},
          {"minimum", 0},
          {"maximum", 1},
          {"default", 0.0},
          {"description",
           "eps: the target is (1 - eps) on the label plus eps / C on every class, as torch's "
           "cross_entropy(label_smoothing=eps)."}}},
        {"weight",
         {{"type", "array"},
          {"items", {{"type", "number"}, {"minimum", 0}}},
          {"default", nlohmann::json::array()},
          {"description",
           "One weight per class (empty: all 1). The mean is weighted: sum(w[y_i] * l_i) / "
           "sum(w[y_i]), as torch."}}}}}};
  registry.add(
      "cross_entropy",
      [](const nlohmann::json& params) -> std::shared_ptr<Loss> {
        return std::make_shared<CrossEntropyLoss>(params.at("label_smoothing").get<double>(),
                                                  params.at("weight").get<std::vector<double>>());
      },
      schema, "softmax cross-entropy with optional label smoothing and class weights (float32)");
}

}  // namespace runner::losses
