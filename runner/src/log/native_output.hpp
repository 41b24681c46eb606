#pragma once
// libtorch's own messages (c10 warnings, c10d and Gloo log lines) go through runner's logging:
// they are written to the process's stderr by code runner does not control, so the rank's
// stderr becomes a pipe whose lines are re-logged with the rank's tag and level, shown on the
// console as runner shows its own (non-main ranks: warnings and errors only), repeated lines
// once with a count, and every line kept in the rank's log file.

#include <cstdio>

namespace runner::log {

/// Starts capturing this process's stderr (file descriptor 2) into the logger; idempotent.
/// The console sink keeps writing to the original stderr.
void capture_native_output();

/// Stops capturing: forwards what is still in the pipe, then gives fd 2 back. Safe to call when
/// nothing is captured.
void release_native_output();

/// The console's stderr: the original one while native output is captured (runner's own
/// one-line errors go there, unprefixed), else stderr.
std::FILE* console_stderr();

/// Releases on destruction (also when an exception ends the run).
struct NativeOutputCapture {
  NativeOutputCapture() { capture_native_output(); }
  ~NativeOutputCapture() { release_native_output(); }
  NativeOutputCapture(const NativeOutputCapture&) = delete;
  NativeOutputCapture& operator=(const NativeOutputCapture&) = delete;
};

}  // namespace runner::log
