#include "util/physical_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace runner::util {

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  // "max" (no limit) does not parse as a number and leaves the machine's figure.
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  std::string text;
  if (limit >> text && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const int64_t cgroup = std::stoll(text);
    bytes = bytes > 0 ? std::min(bytes, cgroup) : cgroup;
  }
  return bytes;
}

}  // namespace runner::util
