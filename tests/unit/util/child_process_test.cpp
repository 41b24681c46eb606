// The one child-process supervisor: a child in its own process group, its lines echoed with
// their prefix and its tail kept, its end described, signals passed on once each, no child left
// behind, output captured or appended to a log file.

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "temp_files.hpp"
#include "util/child_process.hpp"
#include "util/signal_names.hpp"

namespace runner::util {
namespace {

namespace fs = std::filesystem;

ChildSpec shell(const std::string& script, ChildSpec::Output output = ChildSpec::Output::kEcho) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  spec.output = output;
  return spec;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool alive(int pid) { return ::kill(pid, 0) == 0; }

void wait_for_file(const fs::path& path) {
  for (int i = 0; i < 200 && !fs::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
}

TEST(Supervisor, EchoesLinesWithThePrefixAndKeepsTheTail) {
  Supervisor supervisor(2);
  ChildSpec spec = shell("echo one; echo two >&2; echo three; exit 3");
  spec.prefix = "[rank 1] ";
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const size_t child = supervisor.start(spec);
  while (supervisor.any_running()) supervisor.wait(100);
  supervisor.drain();
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("[rank 1] one\n"), std::string::npos) << out;
  EXPECT_NE(err.find("[rank 1] two\n"), std::string::npos) << err;
  const ChildExit exit = supervisor.exit(child);
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_EQ(describe_exit(exit), "exited with code 3");
  EXPECT_EQ(exit.last_lines.size(), 2u) << "the tail keeps 2 lines";
}

TEST(Supervisor, AChildSitsInItsOwnProcessGroup) {
  Supervisor supervisor;
  const size_t child = supervisor.start(shell("sleep 5", ChildSpec::Output::kCapture));
  const int pid = supervisor.pid(child);
  for (int i = 0; i < 100 && ::getpgid(pid) != pid; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // A Ctrl-C or `timeout` that signals our group does not reach it: we pass it on, once.
  EXPECT_EQ(::getpgid(pid), pid);
  EXPECT_NE(::getpgid(pid), ::getpgid(0));
}

TEST(Supervisor, AKilledChildIsDescribedByItsSignal) {
  Supervisor supervisor;
  const size_t child = supervisor.start(shell("kill -9 $$", ChildSpec::Output::kCapture));
  while (supervisor.any_running()) supervisor.wait(100);
  const ChildExit exit = supervisor.exit(child);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_EQ(exit.exit_code, 128 + SIGKILL);
  EXPECT_EQ(describe_exit(exit), "was killed by signal SIGKILL (9)");
}

TEST(Supervisor, LeavesNoChildBehind) {
  int pid = 0;
  {
    Supervisor supervisor;
    pid = supervisor.pid(supervisor.start(shell("exec sleep 30", ChildSpec::Output::kCapture)));
    EXPECT_TRUE(alive(pid));
  }
  EXPECT_FALSE(alive(pid)) << "killed and reaped when the supervisor went";
}

TEST(Supervisor, ALogFileChildAppendsAndItsTailComesFromTheFile) {
  runner::testing::TempDir dir;
  const fs::path log = dir.path() / "point.log";
  std::ofstream(log) << "earlier\n";
  Supervisor supervisor;
  ChildSpec spec =
      shell("echo out; echo 'error: it broke' >&2; exit 1", ChildSpec::Output::kLogFile);
  spec.log_path = log.string();
  const size_t child = supervisor.start(spec);
  while (supervisor.any_running()) supervisor.wait(50);
  EXPECT_EQ(read(log), "earlier\nout\nerror: it broke\n");
  EXPECT_EQ(last_error_line(supervisor.exit(child).last_lines), "error: it broke");
  spec.log_path = (dir.path() / "no" / "such" / "folder.log").string();
  EXPECT_THROW(supervisor.start(spec), Error) << "an unwritable log is an error at start";
}

TEST(RunCommand, CapturesOutputAndTheCode) {
  const CommandResult ok = run_command({"sh", "-c", "echo hello; echo there >&2; exit 4"});
  EXPECT_EQ(ok.exit_code, 4);
  EXPECT_EQ(ok.output, "hello\nthere\n");
  const CommandResult missing = run_command({"runner-no-such-program-here"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.output.find("cannot run runner-no-such-program-here"), std::string::npos)
      << missing.output;
}

// Each SIGINT/SIGTERM we get is passed on to the child once: a second Ctrl-C reaches it as a
// second one (a run that got it twice would stop at once).
TEST(RunPassingOnSignals, EachSignalReachesTheChildOnce) {
  runner::testing::TempDir dir;
  const std::string d = dir.path().string();
  ChildSpec spec = shell("trap 'echo INT >> " + d + "/got' INT; echo $$ > " + d +
                             "/pid; while [ $(wc -l < " + d +
                             "/got 2>/dev/null || echo 0) -lt 2 ]; "
                             "do sleep 0.02; done",
                         ChildSpec::Output::kCapture);
  std::thread signaller([&] {
    wait_for_file(dir.path() / "pid");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the catcher is in place
    ::kill(::getpid(), SIGINT);
    wait_for_file(dir.path() / "got");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(::getpid(), SIGINT);
  });
  bool interrupted = false;
  const ChildExit exit = run_passing_on_signals(spec, interrupted);
  signaller.join();
  EXPECT_TRUE(interrupted);
  EXPECT_EQ(exit.exit_code, 0);
  EXPECT_EQ(read(dir.path() / "got"), "INT\nINT\n");
}

TEST(ChildProcess, LastErrorLineAndTails) {
  EXPECT_EQ(last_error_line({"epoch 1", "RuntimeError: bad shape", "exiting"}),
            "RuntimeError: bad shape");
  EXPECT_EQ(last_error_line({"epoch 1", "  ", "exiting", ""}), "exiting");
  EXPECT_EQ(last_error_line({}), "");
  runner::testing::TempDir dir;
  const std::string file = dir.write("log", "a\n\x1b[31mred\x1b[0m\nc\n");
  EXPECT_EQ(tail_of_file(file, 2), (std::vector<std::string>{"red", "c"}));
  EXPECT_TRUE(tail_of_file((dir.path() / "none").string()).empty());
}

TEST(SignalNames, AreThePosixNames) {
  EXPECT_STREQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_STREQ(signal_name(SIGINT), "SIGINT");
  EXPECT_STREQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_STREQ(signal_name(64), "signal");
}

}  // namespace
}  // namespace runner::util
