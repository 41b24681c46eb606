#pragma once
// Helpers shared by the model tests: building a backbone through the registry, comparing tensors.

#include <memory>
#include <string>

#include <torch/torch.h>

#include "runner/models/model.hpp"
#include "runner/registries.hpp"

namespace runner::test {

inline std::shared_ptr<models::Model> make_model(const std::string& backbone, int64_t in_chans,
                                                 int64_t num_classes, double drop_path_rate = 0.0) {
  nlohmann::json params = {{"backbone", backbone},
                           {"in_chans", in_chans},
                           {"num_classes", num_classes},
                           {"drop_path_rate", drop_path_rate},
                           {"pretrained", false}};
  return registries().models.at(backbone).factory(params);
}

/// max |a - b| / max |b|: the relative error the timm references are checked with.
inline double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max() /
          b.to(torch::kDouble).abs().max())
      .item<double>();
}

inline std::string timm_reference(const std::string& file) {
  return std::string(RUNNER_SHARED_DIR) + "/reference/timm/" + file;
}

}  // namespace runner::test
