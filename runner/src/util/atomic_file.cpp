#include "util/atomic_file.hpp"

#include <filesystem>
#include <fstream>

#include "runner/error.hpp"

namespace runner::util {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw Error("cannot write '" + tmp + "' (disk full or no permission?)");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace runner::util
