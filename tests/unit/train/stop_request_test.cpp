#include "train/stop_request.hpp"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace runner::train {
namespace {

// The first Ctrl-C becomes a request the training loop answers; the process goes on. The same
// signal again at once (delivered directly and through the launcher, or to the process and its
// group) is the same request; a second one later ends the process.
TEST(StopRequest, FirstSignalIsARequestSecondEndsTheProcess) {
  EXPECT_EXIT(
      {
        StopRequestHandler handler(/*announce=*/false);
        if (stop_requested_by() != 0) ::_exit(3);
        ::raise(SIGINT);
        if (stop_requested_by() != SIGINT) ::_exit(4);
        ::raise(SIGINT);  // delivered twice: still one request
        ::raise(SIGINT);
        ::usleep(2200 * 1000);
        ::raise(SIGINT);  // the user insists: gone, as without a handler
        ::_exit(5);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(StopRequest, ARepeatWithinTheWindowCountsOnce) {
  EXPECT_EXIT(
      {
        StopRequestHandler handler(/*announce=*/false);
        ::raise(SIGTERM);
        ::raise(SIGTERM);  // SLURM signals the rank while the launcher passes it on
        ::_exit(stop_requested_by() == SIGTERM ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(StopRequest, SigtermIsRecordedAndAnnounced) {
  EXPECT_EXIT(
      {
        StopRequestHandler handler(/*announce=*/true);
        ::raise(SIGTERM);
        ::_exit(stop_requested_by() == SIGTERM ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "SIGTERM: stopping after the current step");
}

TEST(StopRequest, ExitCodesAreTheShells) {
  EXPECT_EQ(exit_code_for_stop(SIGINT), 130);
  EXPECT_EQ(exit_code_for_stop(SIGTERM), 143);
}

}  // namespace
}  // namespace runner::train
