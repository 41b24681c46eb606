// libFuzzer target: the pixel CSV parser must reject any text with runner::DataError, never
// crash or read out of bounds.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasets/csv_reader.hpp"
#include "runner/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto table = runner::data::parse_pixel_csv(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.csv");
    if (table.pixels.size() != table.rows * table.pixels_per_row) __builtin_trap();
  } catch (const runner::DataError&) {
  }
  return 0;
}
