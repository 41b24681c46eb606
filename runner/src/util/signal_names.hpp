#pragma once
// Signal names as people read them in messages ("SIGTERM"), in one place. Torch-free.

namespace runner::util {

/// "SIGINT", "SIGTERM", "SIGKILL", ... for the signals a run meets; "signal" for others.
const char* signal_name(int signo);

}  // namespace runner::util
