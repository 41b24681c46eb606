// libtorch's own lines through runner's logging: tagged with the rank, shown on a non-main
// rank's console only from warning level on, a repeated line once (and at 10, 100, ... with a
// count), every line in the rank's log file.

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include "log/logging.hpp"
#include "log/native_output.hpp"
#include "temp_files.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(NativeOutput, LibtorchLinesAreTaggedDeduplicatedAndAllKeptInTheLogFile) {
  runner::testing::TempDir dir;
  const std::string console = (dir.path() / "console.txt").string();
  const std::string log_file = (dir.path() / "rank1.log").string();
  // The console of this test: fd 2 into a file.
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  const int fd = ::open(console.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  runner::log::init_logging({/*rank=*/1, /*world_size=*/2, "info", ""});
  runner::log::set_log_file(log_file);
  {
    runner::log::NativeOutputCapture capture;
    for (int i = 0; i < 12; ++i)  // as c10d's connect retry: the same warning once a second
      std::fprintf(stderr, "[W1201 08:24:%02d.123456789 socket.cpp:7] c10d: cannot connect\n", i);
    std::fprintf(stderr, "[I1201 08:24:13.000000001 store.cpp:1] an info line\n");
    TORCH_WARN("a libtorch warning");
    std::fflush(stderr);
  }
  runner::log::init_logging({0, 1, "info", ""});  // detach the test's log file
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);

  const std::string shown = read_file(console);
  const std::string kept = read_file(log_file);
  EXPECT_EQ(count(shown, "c10d: cannot connect"), 2) << shown;  // the first, and at 10 times
  EXPECT_EQ(count(shown, "(the same message 10 times so far)"), 1) << shown;
  EXPECT_EQ(count(shown, "[rank 1] "), count(shown, "\n")) << "every console line is tagged:\n"
                                                           << shown;
  EXPECT_EQ(count(shown, "an info line"), 0) << "a non-main rank shows warnings only:\n" << shown;
  EXPECT_EQ(count(shown, "a libtorch warning"), 1) << shown;
  EXPECT_EQ(count(kept, "c10d: cannot connect"), 12) << kept;
  EXPECT_EQ(count(kept, "an info line"), 1) << kept;
  EXPECT_EQ(count(kept, "[rank 1]"), count(kept, "\n")) << kept;
}

}  // namespace
