// `bce`: binary cross-entropy with logits over every class, in float32, for task: multilabel
// (multi-hot targets [N, C]) and as timm's BinaryCrossEntropy for single-label data (class
// indices become one-hot targets; class probabilities, mixup's, are taken as they are).

#include <string>
#include <vector>

#include <torch/torch.h>

#include "losses/bce.hpp"
#include "losses/class_weights.hpp"
#include "runner/error.hpp"
#include "runner/losses/loss.hpp"

namespace runner::losses {

namespace {

class BceLoss final : public Loss, public TakesSoftTargets {
 public:
  explicit BceLoss(std::vector<double> pos_weight)
      : pos_weight_(std::move(pos_weight), "loss.pos_weight", "weights") {}

  torch::Tensor compute(const torch::Tensor& logits, const torch::Tensor& targets) override {
    if (logits.dim() != 2)
      throw Error("loss.bce: expected logits [N, C], got " + std::to_string(logits.dim()) +
                  " dimensions");
    const torch::Tensor wide = logits.to(torch::kFloat);
    const torch::Tensor target =
        targets.is_floating_point()
            ? targets.to(torch::kFloat)
            : torch::one_hot(targets.to(torch::kLong), logits.size(1)).to(torch::kFloat);
    if (target.sizes() != logits.sizes())
      throw Error("loss.bce: targets of shape " + c10::str(target.sizes()) +
                  " for logits of shape " + c10::str(logits.sizes()));
    auto options = torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions();
    if (!pos_weight_.empty()) options.pos_weight(pos_weight_.for_logits(logits));
    return torch::nn::functional::binary_cross_entropy_with_logits(wide, target, options);
  }

 private:
  ClassWeights pos_weight_;
};

}  // namespace

void add_bce_loss(Registry<LossFactory>& registry) {
  nlohmann::json schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"pos_weight",
         {{"type", "array"},
          {"items", {{"type", "number"}, {"minimum", 0}}},
          {"default", nlohmann::json::array()},
          {"description",
           "One weight per class for its positive targets (empty: all 1), as torch's "
           "binary_cross_entropy_with_logits(pos_weight=...): above 1 favours recall of a rare "
           "class (negatives / positives is the usual choice)."}}}}}};
  registry.add(
      "bce",
      [](const nlohmann::json& params) -> std::shared_ptr<Loss> {
        return std::make_shared<BceLoss>(params.at("pos_weight").get<std::vector<double>>());
      },
      schema,
      "binary cross-entropy with logits over every class (task: multilabel; float32), "
      "optional pos_weight");
}

}  // namespace runner::losses
