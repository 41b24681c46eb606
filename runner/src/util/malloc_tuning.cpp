#include "util/malloc_tuning.hpp"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace runner::util {

void tune_malloc_for_training() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  constexpr int kLargestMmapThreshold = 32 * 1024 * 1024;  // glibc's HEAP_MAX_SIZE / 2 on 64-bit
  ::mallopt(M_MMAP_THRESHOLD, kLargestMmapThreshold);
  ::mallopt(M_TRIM_THRESHOLD, -1);  // never trim: -1 is the largest size_t
}

}  // namespace runner::util
