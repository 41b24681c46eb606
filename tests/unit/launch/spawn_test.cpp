#include "launch/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "runner/error.hpp"

namespace runner::launch {
namespace {

namespace fs = std::filesystem;

// Each rank runs this shell script; $RANK etc. come from the launcher.
SpawnOptions shell_ranks(int n, const std::string& script) {
  SpawnOptions options;
  options.executable = "/bin/sh";
  options.args = {"-c", script};
  options.nproc_per_node = n;
  options.stop_grace_s = 1.0;
  return options;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "runner_spawn_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string read(const std::string& name) const {
    std::ifstream in(path / name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

bool process_alive(const std::string& pid_text) {
  if (pid_text.empty()) return false;
  return ::kill(std::stoi(pid_text), 0) == 0 || errno != ESRCH;
}

TEST(Spawn, EveryRankGetsItsPlaceInTheWorld) {
  TempDir dir;
  auto options = shell_ranks(3,
                             "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE "
                             "$MASTER_ADDR $MASTER_PORT $RUNNER_LAUNCHED > " +
                                 dir.path.string() + "/$RANK");
  ASSERT_EQ(spawn_ranks(options).exit_code, 0);
  std::string port;
  for (int r = 0; r < 3; ++r) {
    std::istringstream fields(dir.read(std::to_string(r)));
    std::string rank, local, world, local_world, addr, this_port, launched;
    fields >> rank >> local >> world >> local_world >> addr >> this_port >> launched;
    EXPECT_EQ(rank, std::to_string(r));
    EXPECT_EQ(local, std::to_string(r));
    EXPECT_EQ(world, "3");
    EXPECT_EQ(local_world, "3");
    EXPECT_EQ(addr, "127.0.0.1");
    EXPECT_EQ(launched, "1");
    EXPECT_GT(std::stoi(this_port), 0);  // master_port 0 picked a real port
    if (r > 0) EXPECT_EQ(this_port, port);
    port = this_port;
  }
}

TEST(Spawn, SecondNodeRanksAreOffset) {
  TempDir dir;
  auto options =
      shell_ranks(2, "echo $RANK $LOCAL_RANK $WORLD_SIZE > " + dir.path.string() + "/$RANK");
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_port = 29999;
  ASSERT_EQ(spawn_ranks(options).exit_code, 0);
  EXPECT_EQ(dir.read("2"), "2 0 4\n");
  EXPECT_EQ(dir.read("3"), "3 1 4\n");
}

TEST(Spawn, OutputOfOtherRanksIsPrefixed) {
  testing::internal::CaptureStdout();
  ASSERT_EQ(spawn_ranks(shell_ranks(2, "echo hello from $RANK")).exit_code, 0);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("hello from 0"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 1] hello from 1"), std::string::npos) << out;
  EXPECT_EQ(out.find("[rank 0]"), std::string::npos) << out;
}

TEST(Spawn, FailingRankStopsTheOthersAndIsReported) {
  TempDir dir;
  const std::string d = dir.path.string();
  auto options = shell_ranks(3, "echo $$ > " + d +
                                    "/pid$RANK; if [ $RANK = 1 ]; then sleep 0.5; echo last words; "
                                    "echo error line >&2; exit 3; fi; exec sleep 30");
  testing::internal::CaptureStderr();
  const LaunchResult result = spawn_ranks(options);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(result.exit_code, 3);
  // How each ended goes back to the caller, which records it where it keeps the run.
  EXPECT_EQ(result.failed_rank, 1);
  EXPECT_EQ(result.failure.exit_code, 3);
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_NE(result.ranks[0].signal, 0) << "rank 0 was stopped by a signal";
  EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("exited with code 3"), std::string::npos) << err;
  EXPECT_NE(err.find("last words"), std::string::npos) << err;
  EXPECT_NE(err.find("error line"), std::string::npos) << err;
  EXPECT_FALSE(process_alive(dir.read("pid0").substr(0, dir.read("pid0").size() - 1)));
  EXPECT_FALSE(process_alive(dir.read("pid2").substr(0, dir.read("pid2").size() - 1)));
}

TEST(Spawn, KilledRankIsReportedWithTheSignalName) {
  testing::internal::CaptureStderr();
  int code =
      spawn_ranks(shell_ranks(2, "if [ $RANK = 0 ]; then kill -9 $$; fi; exec sleep 30")).exit_code;
  std::string err = testing::internal::GetCapturedStderr();
  // A failed run (1), the signal named; 128 + N stays for an interrupt of the launcher itself.
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("rank 0"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGKILL"), std::string::npos) << err;
}

// Ctrl-C: the launcher passes the signal on once (each rank stops after its step and saves);
// the ranks sit in their own process group, so a signal to the launcher's group reaches them
// only through it; the same signal again at once is the same request; a second Ctrl-C later
// kills them at once.
TEST(Spawn, InterruptIsPassedOnOnceAndASecondOneStopsAtOnce) {
  TempDir dir;
  const std::string d = dir.path.string();
  auto options = shell_ranks(2, "trap 'echo got INT >> " + d + "/int$RANK' INT; echo $$ > " + d +
                                    "/pid$RANK; while :; do sleep 0.05; done");
  options.interrupt_grace_s = 60;  // longer than the test: only the second signal may end it
  // The launcher in a process of its own group, so that a signal to the group (as a terminal's
  // Ctrl-C or `timeout` sends) reaches no test runner.
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::setpgid(0, 0);
    const int err = ::open((d + "/launcher.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, 2);
    ::_exit(spawn_ranks(options).exit_code);
  }
  ::setpgid(launcher, launcher);
  auto wait_for = [&](const char* a, const char* b) {
    for (int i = 0; i < 200 && !(fs::exists(dir.path / a) && fs::exists(dir.path / b)); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  wait_for("pid0", "pid1");
  ::kill(-launcher, SIGINT);
  // `timeout` signals the command, then its group: the same interrupt twice, at once. It
  // counts once.
  ::kill(launcher, SIGINT);
  wait_for("int0", "int1");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(dir.read("int0"), "got INT\n");  // once, though the group got it too
  EXPECT_EQ(dir.read("int1"), "got INT\n");
  // A second, deliberate Ctrl-C (after the repeat window) stops the ranks at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  const auto second = std::chrono::steady_clock::now();
  ::kill(launcher, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(launcher, &status, 0), launcher);
  EXPECT_LT(std::chrono::steady_clock::now() - second, std::chrono::seconds(5));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string err = dir.read("launcher.err");
  EXPECT_NE(err.find("received SIGINT: every rank stops after its current step"), std::string::npos)
      << err;
  EXPECT_NE(err.find("received SIGINT again: stopping all ranks now"), std::string::npos) << err;
  EXPECT_FALSE(process_alive(dir.read("pid0").substr(0, dir.read("pid0").size() - 1)));
  EXPECT_FALSE(process_alive(dir.read("pid1").substr(0, dir.read("pid1").size() - 1)));
}

// Ranks that end well after an interrupt (it came after their work was done): the run is
// complete, 0.
TEST(Spawn, InterruptedRanksThatEndWellAreSuccess) {
  TempDir dir;
  const std::string d = dir.path.string();
  auto options = shell_ranks(
      2, "trap 'exit 0' TERM; echo $$ > " + d + "/pid$RANK; while :; do sleep 0.05; done");
  int code = -1;
  testing::internal::CaptureStderr();
  std::thread launcher([&] { code = spawn_ranks(options).exit_code; });
  for (int i = 0; i < 100 && !(fs::exists(dir.path / "pid0") && fs::exists(dir.path / "pid1")); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(::getpid(), SIGTERM);
  launcher.join();
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 0);
}

TEST(Spawn, RanksIgnoringSigtermAreKilled) {
  TempDir dir;
  const std::string d = dir.path.string();
  auto options = shell_ranks(2, "echo $$ > " + d +
                                    "/pid$RANK; if [ $RANK = 0 ]; then sleep 0.3; exit 1; fi; "
                                    "trap '' TERM; exec sleep 30");
  options.stop_grace_s = 0.5;
  testing::internal::CaptureStderr();
  EXPECT_EQ(spawn_ranks(options).exit_code, 1);
  testing::internal::GetCapturedStderr();
  std::string pid1 = dir.read("pid1");
  EXPECT_FALSE(process_alive(pid1.substr(0, pid1.size() - 1)));
}

TEST(Spawn, BadLayoutsAreConfigErrors) {
  auto options = shell_ranks(2, "true");
  options.nnodes = 2;
  options.master_port = 0;
  EXPECT_THROW(spawn_ranks(options), ConfigError);  // other nodes cannot learn a picked port
  options = shell_ranks(2, "true");
  options.node_rank = 1;
  EXPECT_THROW(spawn_ranks(options), ConfigError);
  options = shell_ranks(0, "true");
  EXPECT_THROW(spawn_ranks(options), ConfigError);
  options = shell_ranks(1, "true");
  options.executable = "/nonexistent/program";
  EXPECT_THROW(spawn_ranks(options), ConfigError);
}

TEST(Spawn, TorchelasticErrorFileHasTheMessage) {
  TempDir dir;
  const std::string file = (dir.path / "error.json").string();
  ::setenv("TORCHELASTIC_ERROR_FILE", file.c_str(), 1);
  write_torchelastic_error("rank 1: something \"quoted\" broke");
  ::unsetenv("TORCHELASTIC_ERROR_FILE");
  std::string json = dir.read("error.json");
  EXPECT_NE(json.find("\"message\":{\"extraInfo\""), std::string::npos) << json;
  EXPECT_NE(json.find("something \\\"quoted\\\" broke"), std::string::npos) << json;
  EXPECT_NE(json.find("\"timestamp\""), std::string::npos) << json;
}

}  // namespace
}  // namespace runner::launch
