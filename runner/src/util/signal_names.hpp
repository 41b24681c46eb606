#pragma once
// Signal names as people read them in messages ("SIGTERM"), in one place. Torch-free.

namespace runner::util {

/// A stop signal that arrives again within this many seconds of the first is the same request
/// delivered twice (`timeout` signals the command and then its process group; SLURM and
/// container stops signal every process while runner's launcher passes the signal on too): it
/// counts once. One later is a second, deliberate request: stop at once.
constexpr double kRepeatedSignalSeconds = 2.0;

/// Seconds on the monotonic clock; async-signal-safe (for signal handlers).
double monotonic_seconds();

/// "SIGINT", "SIGTERM", "SIGKILL", ... for the signals a run meets; "signal" for others.
const char* signal_name(int signo);

}  // namespace runner::util
