#pragma once
// Whole-file text writes that never leave a half-written file behind. Torch-free.

#include <string>

namespace runner::util {

/// Writes `text` to `path` through `path`.tmp and a rename: a reader sees the old file or the
/// new one, never a part. Throws runner::Error when the file cannot be written.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace runner::util
