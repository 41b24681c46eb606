#include "train/stop_request.hpp"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace runner::train {
namespace {

// The first Ctrl-C becomes a request the training loop answers; the process goes on.
TEST(StopRequest, FirstSignalIsARequestSecondEndsTheProcess) {
  EXPECT_EXIT(
      {
        StopRequestHandler handler(/*announce=*/false);
        if (stop_requested_by() != 0) ::_exit(3);
        ::raise(SIGINT);
        if (stop_requested_by() != SIGINT) ::_exit(4);
        ::raise(SIGINT);  // the user insists: gone, as without a handler
        ::_exit(5);
      },
      ::testing::KilledBySignal(SIGINT), "");
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
