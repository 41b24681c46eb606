#pragma once
// Timing helpers the op benches share: a pass's mean over repetitions, medians of rounds.

#include <algorithm>
#include <chrono>
#include <vector>

namespace runner::bench {

/// Runs `pass` once to warm up, then `reps` times; the mean milliseconds per pass.
template <typename Pass>
double mean_ms(Pass&& pass, int reps) {
  pass();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) pass();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         reps;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace runner::bench
