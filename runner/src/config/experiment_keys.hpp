#pragma once
// The order in which a resolved experiment's top-level keys are printed and saved.

#include <string>
#include <vector>

namespace runner::config {

inline const std::vector<std::string>& experiment_key_order() {
  static const std::vector<std::string> order = {
      "name",      "seed",      "log_level", "plugins", "launch", "precision", "data",  "model",
      "optimizer", "scheduler", "loss",      "metrics", "train",  "predict",   "output"};
  return order;
}

}  // namespace runner::config
