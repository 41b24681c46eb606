#include "util/process_title.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <cstring>

namespace runner::util {
namespace {

char* g_area = nullptr;  // argv[0]'s text ...
size_t g_room = 0;       // ... and the bytes up to the end of the last contiguous argument

}  // namespace

void remember_command_line(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) return;
  g_area = argv[0];
  char* end = argv[0] + std::strlen(argv[0]) + 1;
  // The kernel lays the arguments out one after another; stop at the first that is elsewhere.
  for (int i = 1; i < argc && argv[i] == end; ++i) end = argv[i] + std::strlen(argv[i]) + 1;
  g_room = static_cast<size_t>(end - g_area);
}

void set_process_title(const std::string& title, const std::string& name) {
  ::prctl(PR_SET_NAME, name.substr(0, 15).c_str(), 0, 0, 0);
  if (g_area == nullptr || g_room < 2) return;
  const size_t length = std::min(title.size(), g_room - 1);
  std::memcpy(g_area, title.data(), length);
  std::memset(g_area + length, 0, g_room - length);  // NULs: no trace of the old arguments
}

}  // namespace runner::util
