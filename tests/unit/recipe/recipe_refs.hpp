#pragma once
// What the recipe parity tests share: where tests/timm/make_recipe_refs.py wrote timm's
// references (RUNNER_RECIPE_REFS, set by ctest's recipe_refs fixture) and its recorded draws.

#include <cstdlib>
#include <deque>
#include <string>

#include <torch/torch.h>

namespace runner::test {

/// The references' folder; "" outside ctest.
inline std::string recipe_refs_dir() {
  const char* dir = std::getenv("RUNNER_RECIPE_REFS");
  return dir ? dir : "";
}

/// A recorded draw tensor's values in order (empty when the file has none of that kind).
inline std::deque<double> recorded_draws(const torch::Tensor& t) {
  std::deque<double> out;
  if (!t.defined()) return out;
  const torch::Tensor d = t.to(torch::kDouble).contiguous();
  for (int64_t i = 0; i < d.numel(); ++i) out.push_back(d.data_ptr<double>()[i]);
  return out;
}

}  // namespace runner::test
