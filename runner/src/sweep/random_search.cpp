#include "sweep/random_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace runner::sweep {
namespace {

using nlohmann::json;

// SplitMix64: tiny, well mixed, and the same sequence everywhere.
class Draws {
 public:
  explicit Draws(uint64_t seed) : state_(seed) {}
  /// Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

double four_digits(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", v);
  return std::strtod(text, nullptr);
}

json draw(const json& distribution, Draws& draws) {
  const double u = draws.unit();
  if (distribution.contains("choice")) {
    const json& values = distribution.at("choice");
    return values.at(static_cast<size_t>(u * static_cast<double>(values.size())));
  }
  if (distribution.contains("int")) {
    const int64_t lo = distribution.at("int").at(0).get<int64_t>();
    const int64_t hi = distribution.at("int").at(1).get<int64_t>();
    const int64_t span = hi >= lo ? hi - lo + 1 : lo - hi + 1;
    return std::min(lo, hi) + static_cast<int64_t>(u * static_cast<double>(span));
  }
  // Rounding may step past an end of a narrow range: the value stays inside it.
  const auto inside = [](double v, double a, double b) {
    return std::clamp(v, std::min(a, b), std::max(a, b));
  };
  if (distribution.contains("loguniform")) {
    const double a = distribution.at("loguniform").at(0).get<double>();
    const double b = distribution.at("loguniform").at(1).get<double>();
    const double lo = std::log(a), hi = std::log(b);
    return inside(four_digits(std::exp(lo + u * (hi - lo))), a, b);
  }
  const double a = distribution.at("uniform").at(0).get<double>();
  const double b = distribution.at("uniform").at(1).get<double>();
  return inside(four_digits(a + u * (b - a)), a, b);
}

}  // namespace

std::vector<json> draw_random_points(const json& distributions,
                                     const std::vector<std::string>& key_order, int trials,
                                     uint64_t seed) {
  Draws draws(seed);
  std::vector<json> points;
  for (int t = 0; t < trials; ++t) {
    json point = json::object();
    for (const auto& key : key_order) point[key] = draw(distributions.at(key), draws);
    points.push_back(point);
  }
  return points;
}

}  // namespace runner::sweep
