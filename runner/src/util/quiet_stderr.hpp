#pragma once
// Silencing the stderr of libraries runner calls where their own words would only repeat ours:
// libpng prints "libpng error: ..." before OpenCV hands runner an empty image, which runner
// then reports in one line naming the file. Torch-free.

namespace runner::util {

/// While it lives, whatever writes to file descriptor 2 writes to /dev/null (process-wide: while
/// any thread holds one, a warning another thread logs is lost too; hold it around one call).
class QuietStderr {
 public:
  QuietStderr();
  ~QuietStderr();
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;
};

}  // namespace runner::util
