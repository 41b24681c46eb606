#pragma once
// Helpers shared by the model tests: building a backbone through the registry, comparing tensors.

#include <cstdlib>
#include <filesystem>
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

/// ../shared beside the checkout, or $RUNNER_SHARED_DIR.
inline std::string shared_dir() {
  const char* dir = std::getenv("RUNNER_SHARED_DIR");
  return dir && *dir ? dir : RUNNER_SHARED_DIR;
}

inline std::string timm_reference(const std::string& file) {
  return shared_dir() + "/reference/timm/" + file;
}

/// The offline timm references live in ../shared beside our own checkouts only; a user's clone
/// has none, and the same checks run against the real timm in tests/unit/timm.
#define RUNNER_REQUIRE_SHARED_TIMM_REFERENCES()                                                  \
  if (!std::filesystem::exists(runner::test::timm_reference("README.md")))                       \
  GTEST_SKIP() << "no " << runner::test::timm_reference("")                                      \
               << " (it exists beside the project's own checkouts only; tests/unit/timm checks " \
                  "the same against the real timm)"

}  // namespace runner::test
