// libFuzzer target: the IDX decoder and the gunzip in front of it must reject any bytes with
// runner::DataError, never crash or read out of bounds.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "datasets/idx_reader.hpp"
#include "runner/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    if (runner::data::is_gzip(data, size)) {
      auto inflated = runner::data::gunzip(data, size, "fuzz.gz", size_t{1} << 24);
      runner::data::parse_idx(std::move(inflated), "fuzz");
    } else {
      const auto array = runner::data::parse_idx(data, size, "fuzz");
      if (array.count() > 0) (void)array.value(array.count() - 1);
    }
  } catch (const runner::DataError&) {
  }
  return 0;
}
