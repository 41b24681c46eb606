#pragma once
// A small counter-based random generator: a sample's augmentation depends only on
// (seed, epoch, sample index), never on which thread or in which order samples are loaded.

#include <cmath>
#include <cstdint>

namespace runner::data {

class Rng {
 public:
  /// A stream determined only by its three keys.
  Rng(uint64_t seed, uint64_t epoch, uint64_t index)
      : state_(mix(mix(mix(seed) ^ (epoch + 0x9E3779B97F4A7C15ULL)) ^ index)) {}
  explicit Rng(uint64_t seed) : state_(mix(seed)) {}

  /// Next 64 random bits (splitmix64).
  uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return mix(state_);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [lo, hi] (inclusive).
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(span == 0 ? next_u64() : next_u64() % span);
  }
  /// True with probability p.
  bool bernoulli(double p) { return uniform() < p; }
  /// Standard normal (Box-Muller, one of the pair): two uniforms drawn, the first as 1 - u.
  double normal() {
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

}  // namespace runner::data
