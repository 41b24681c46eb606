// Progress lines when stdout is not a terminal (logs, CI): every line_every batches, the last
// batch, and whenever too long has passed without a line (slow steps must not look like a hang).

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "output/progress.hpp"

namespace runner::output {
namespace {

int count_lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(Progress, PlainLinesEveryLineEveryBatchesAndAtTheEnd) {
  Progress progress(true, /*terminal=*/false, /*line_every=*/4, /*max_silence_seconds=*/3600);
  ::testing::internal::CaptureStdout();
  progress.start("epoch 1/1", 10);
  for (int done = 1; done <= 10; ++done) progress.update(done, 100.0, 0.5);
  progress.finish();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(count_lines(out), 3) << out;  // 4, 8, 10
  EXPECT_NE(out.find("epoch 1/1 4/10 "), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 1/1 10/10 "), std::string::npos) << out;
  EXPECT_EQ(out.find("epoch 1/1 5/10 "), std::string::npos) << out;
}

TEST(Progress, ALineWheneverTheSilenceWouldLastTooLong) {
  Progress progress(true, /*terminal=*/false, /*line_every=*/1000, /*max_silence_seconds=*/0.05);
  ::testing::internal::CaptureStdout();
  progress.start("epoch 1/1", 100);
  progress.update(1, 0.0, 0.5);  // too soon: nothing
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  progress.update(2, 0.0, 0.5);  // 80 ms of silence: a line
  progress.update(3, 0.0, 0.5);  // just printed: nothing
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(count_lines(out), 1) << out;
  EXPECT_NE(out.find("epoch 1/1 2/100 "), std::string::npos) << out;
}

}  // namespace
}  // namespace runner::output
