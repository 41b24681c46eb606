// libFuzzer target: the safetensors header parser must reject any input with a DataError and
// never read outside the buffer; accepted entries must lie inside it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "io/safetensors_header.hpp"
#include "runner/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    runner::io::SafetensorsHeader h = runner::io::parse_safetensors_buffer(data, size, "fuzz");
    uint64_t previous_end = 0;
    for (const auto& e : h.entries) {
      // Invariants the reader relies on: in bounds, sorted, not overlapping.
      if (e.end < e.begin || h.data_offset + e.end > size || e.begin < previous_end) std::abort();
      previous_end = e.end;
    }
  } catch (const runner::DataError&) {
  }
  return 0;
}
