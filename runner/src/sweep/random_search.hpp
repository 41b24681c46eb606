#pragma once
// Random search: points drawn from per-key distributions, reproducible from a seed on every
// machine and compiler (our own generator and mapping, not <random>'s distributions, whose
// output the standard leaves to the library). Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace runner::sweep {

/// `trials` points, each a JSON object key.path -> value. `distributions` maps key.path to one
/// of {choice: [..]}, {uniform: [lo, hi]}, {loguniform: [lo, hi]}, {int: [lo, hi]} (as
/// schemas/sweep.schema.json checks); keys are drawn in `key_order`. Floats are rounded to 4
/// significant digits, so the point's id shows the value it runs with.
std::vector<nlohmann::json> draw_random_points(const nlohmann::json& distributions,
                                               const std::vector<std::string>& key_order,
                                               int trials, uint64_t seed);

}  // namespace runner::sweep
