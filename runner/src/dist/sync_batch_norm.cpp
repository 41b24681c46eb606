#include "dist/sync_batch_norm.hpp"

#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "runner/error.hpp"
#include "runner/models/batch_norm.hpp"

namespace runner::dist {
namespace {

bool is_plain_batch_norm(torch::nn::Module& m) {
  return dynamic_cast<torch::nn::BatchNorm1dImpl*>(&m) != nullptr ||
         dynamic_cast<torch::nn::BatchNorm2dImpl*>(&m) != nullptr ||
         dynamic_cast<torch::nn::BatchNorm3dImpl*>(&m) != nullptr ||
         // A TorchScript model's BatchNorm (timm/<name>), which runs inside the script: its
         // part is named after the scripted class, e.g. __torch__.torch.nn.modules.batchnorm.
         // BatchNorm2d or __torch__.timm.layers.norm_act.BatchNormAct2d.
         (m.name().rfind("__torch__.", 0) == 0 && m.name().find("BatchNorm") != std::string::npos);
}

// Walks children by hand: named_modules() needs the root to be owned by a shared_ptr.
void collect_modules(torch::nn::Module& parent, const std::string& prefix,
                     std::vector<std::pair<std::string, torch::nn::Module*>>& out) {
  for (const auto& child : parent.named_children()) {
    const std::string path = prefix.empty() ? child.key() : prefix + "." + child.key();
    out.emplace_back(path, child.value().get());
    collect_modules(*child.value(), path, out);
  }
}

}  // namespace

int convert_sync_batchnorm(torch::nn::Module& module, const std::shared_ptr<World>& world) {
  std::vector<std::pair<std::string, torch::nn::Module*>> all = {{"(the model itself)", &module}};
  collect_modules(module, "", all);
  std::vector<models::BatchNorm2dImpl*> syncable;
  for (const auto& [path, m] : all) {
    if (auto* bn = dynamic_cast<models::BatchNorm2dImpl*>(m)) {
      syncable.push_back(bn);
    } else if (is_plain_batch_norm(*m)) {
      throw ConfigError("train.bn_sync: sync: layer '" + path + "' is a " + m->name() +
                        ", which cannot synchronise; build it as runner::models::BatchNorm2d "
                        "(runner/models/batch_norm.hpp) in the model plugin (a TorchScript model "
                        "cannot be changed), or set train.bn_sync to broadcast or local");
    }
  }
  if (world->distributed()) {
    models::AllReduceSum all_reduce_sum = [world](torch::Tensor& t) {
      world->all_reduce_(t, ReduceOp::kSum);
    };
    for (auto* bn : syncable) bn->set_sync(all_reduce_sum);
  }
  return static_cast<int>(syncable.size());
}

}  // namespace runner::dist
