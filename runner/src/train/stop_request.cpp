#include "train/stop_request.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>

#include "util/signal_names.hpp"

namespace runner::train {
namespace {

volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_announce = 0;
double g_first_signal_at = 0;  // monotonic seconds; written before g_stop_signal is set
struct sigaction g_old_int {};
struct sigaction g_old_term {};
struct sigaction g_old_usr1 {};
bool g_usr1 = false;

void write_stderr(const char* text) { (void)!::write(2, text, std::strlen(text)); }

extern "C" void on_stop_signal(int signo) {
  if (g_stop_signal != 0) {
    // The same stop delivered twice (directly and through runner's launcher, or to a process
    // and its group) is one stop.
    if (util::monotonic_seconds() - g_first_signal_at < util::kRepeatedSignalSeconds) return;
    if (signo == SIGUSR1) return;  // SLURM's warning, repeated: no one asks to stop at once
    // A second request: the user wants out now. Die of it, as without a handler.
    ::signal(signo, SIG_DFL);
    ::raise(signo);
    return;
  }
  g_first_signal_at = util::monotonic_seconds();
  g_stop_signal = signo;
  if (g_announce)
    write_stderr(signo == SIGINT ? "runner: SIGINT: stopping after the current step and saving "
                                   "checkpoints/last.pt (press Ctrl-C again to stop at once)\n"
                 : signo == SIGUSR1
                     ? "runner: SIGUSR1 (SLURM's time limit is near): saving checkpoints/last.pt "
                       "after the current step, then requeueing the job\n"
                     : "runner: SIGTERM: stopping after the current step and saving "
                       "checkpoints/last.pt (a second signal stops at once)\n");
}

}  // namespace

StopRequestHandler::StopRequestHandler(bool announce, bool requeue_on_usr1) {
  g_announce = announce ? 1 : 0;
  g_usr1 = requeue_on_usr1;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // Restart interrupted system calls: a collective's socket read must not fail with EINTR.
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, &g_old_int);
  ::sigaction(SIGTERM, &action, &g_old_term);
  if (g_usr1) {
    ::sigaction(SIGUSR1, &action, &g_old_usr1);
    // runner's launcher starts ranks with SIGUSR1 blocked (launch/spawn.cpp): one that came
    // during the start is delivered now, to this handler.
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    ::pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
  }
}

StopRequestHandler::~StopRequestHandler() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  if (g_usr1) ::sigaction(SIGUSR1, &g_old_usr1, nullptr);
}

int stop_requested_by() { return g_stop_signal; }

int exit_code_for_stop(int signo) { return 128 + signo; }

}  // namespace runner::train
