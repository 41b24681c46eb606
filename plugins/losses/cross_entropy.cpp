// `cross_entropy`: torch's cross_entropy with label smoothing and class weights, in float32;
// with class probabilities as targets (train.mixup) it is timm's SoftTargetCrossEntropy,
// -sum(p * log_softmax(logits)) averaged over the batch.

#include <string>
#include <vector>

#include <torch/torch.h>

#include "losses/class_weights.hpp"
#include "losses/cross_entropy.hpp"
#include "runner/error.hpp"
#include "runner/losses/loss.hpp"

namespace runner::losses {

namespace {

class CrossEntropyLoss final : public Loss, public TakesSoftTargets {
 public:
  CrossEntropyLoss(double label_smoothing, std::vector<double> weight)
      : label_smoothing_(label_smoothing),
        weight_(std::move(weight), "loss.weight", "class weights") {}

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
    if (!weight_.empty()) options.weight(weight_.for_logits(logits));
    return torch::nn::functional::cross_entropy(wide, targets, options);
  }

 private:
  double label_smoothing_;
  ClassWeights weight_;
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
