#pragma once
// What timm's RandAugment decides for one image, drawn from any source of its random numbers
// in timm's order (the sample's Rng in runs; timm's recorded draws in the parity test).

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "runner/error.hpp"

#include "rand_augment_ops.hpp"

namespace runner::data::rand_augment {

struct Options {
  int num_ops = 2;
  double magnitude = 9, magnitude_std = 0.5, magnitude_max = 10;  ///< std inf: uniform(0, m)
  bool increasing = true;
  double p = 0.5;
  std::string interpolation = "random";  ///< random (timm's bilinear or bicubic), bilinear, bicubic
};

struct PlannedOp {
  Op op = Op::kAutoContrast;
  bool applied = false;
  double magnitude = 0;  ///< clipped to [0, magnitude_max]
  bool negate = false;
  bool bicubic = false;
};

/// timm's RandAugment.__call__ and AugmentOp.__call__: num_ops ops chosen with replacement
/// (`Random::choose(n)`: numpy's choice), then for each: the p coin (random() > p skips, drawn
/// only when p < 1), the magnitude (gauss(m, std), or uniform(0, m) for an infinite std, only
/// when std > 0), the sign coin of ops that negate (random() > 0.5), the resampling of affine
/// ops (choose(2): random.choice of bilinear, bicubic; only when interpolation is random).
template <class Random>
std::vector<PlannedOp> plan_ops(Random& random, const Options& o) {
  std::vector<PlannedOp> plan(static_cast<size_t>(o.num_ops));
  for (auto& step : plan) step.op = static_cast<Op>(random.choose_op());
  for (auto& step : plan) {
    if (o.p < 1.0 && random.random() > o.p) continue;
    step.applied = true;
    double m = o.magnitude;
    if (o.magnitude_std > 0) {
      m = std::isinf(o.magnitude_std) ? random.uniform(0.0, m) : random.gauss(m, o.magnitude_std);
    }
    step.magnitude = std::max(0.0, std::min(m, o.magnitude_max));
    if (takes_sign(step.op, o.increasing)) step.negate = random.random() > 0.5;
    if (is_affine(step.op))
      step.bicubic = o.interpolation == "random" ? random.choose_resampling() == 1
                                                 : o.interpolation == "bicubic";
  }
  return plan;
}

// timm's config string: rand-m9-n2-mstd0.5-mmax10-inc1-p0.5 (sections in any order). As in
// timm 1.0.31's rand_augment_transform, a section the string leaves out takes timm's default,
// not the option's: m 10, n 2, p 0.5, mstd 0, mmax 10, inc 0 (interpolation and fill stay).
inline void apply_config_string(const std::string& text, Options& o) {
  const auto bad = [&](const std::string& why) {
    throw ConfigError("transform rand_augment: config '" + text + "': " + why +
                      "; write timm's form, e.g. rand-m9-mstd0.5-inc1 (sections m, n, p, mstd, "
                      "mmax, inc after 'rand')");
  };
  std::vector<std::string> sections;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t dash = text.find('-', start);
    sections.push_back(
        text.substr(start, dash == std::string::npos ? std::string::npos : dash - start));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  if (sections.empty() || sections[0] != "rand") bad("it does not begin with 'rand'");
  o.num_ops = 2;
  o.magnitude = 10;
  o.magnitude_std = 0;
  o.magnitude_max = 10;
  o.increasing = false;
  o.p = 0.5;
  static const std::regex section(R"(^(mstd|mmax|inc|m|n|p)(\d+(\.\d*)?)$)");
  for (size_t i = 1; i < sections.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(sections[i], m, section)) bad("'" + sections[i] + "' is no section");
    const std::string key = m[1];
    const double value = std::stod(m[2]);
    if (key == "m") o.magnitude = std::floor(value);
    if (key == "n") o.num_ops = static_cast<int>(value);
    if (key == "p") o.p = value;
    if (key == "mstd")
      o.magnitude_std = value > 100 ? std::numeric_limits<double>::infinity() : value;
    // timm clips at `magnitude_max or 10`: mmax0 is the default 10.
    if (key == "mmax") o.magnitude_max = std::floor(value) == 0 ? 10 : std::floor(value);
    if (key == "inc") o.increasing = static_cast<int>(value) != 0;
  }
}

}  // namespace runner::data::rand_augment
