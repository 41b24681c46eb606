#include "run/usable_sample.hpp"

#include <string>

#include "runner/error.hpp"
#include "util/quiet_stderr.hpp"

namespace runner::run {

std::pair<data::Sample, size_t> usable_sample(const config::Experiment& e,
                                              const data::Dataset& split, size_t start,
                                              bool backwards) {
  std::string first_failure;
  for (size_t i = start; i < split.size(); i = backwards ? i - 1 : i + 1) {
    try {
      const util::QuietStderr quiet;  // libpng's "libpng error: ..." says less than our line
      return {split.get(i), i};
    } catch (const DataError& error) {
      if (e.options.data.on_bad_image != "skip")
        throw ConfigError(std::string("data.check: ") + error.what() +
                          " (data.check: full finds every such file; data.on_bad_image: skip "
                          "leaves them out)");
      if (first_failure.empty()) first_failure = error.what();
    }
  }  // backwards past 0: i wraps to SIZE_MAX, which ends the loop
  throw ConfigError("data.on_bad_image skip: no sample of " + split.describe() +
                    " can be read (first: " + first_failure + ")");
}

}  // namespace runner::run
