// A command's flags: declared once, with help and environment variable; an unknown or
// malformed flag is one line naming the command, the close matches and where help is.

#include <cstdlib>

#include <gtest/gtest.h>

#include "cli/command_line.hpp"
#include "runner/error.hpp"

namespace runner::cli {
namespace {

CommandLine demo() {
  CommandLine cl("demo", "FILE [--epochs N]", "A demo command.");
  cl.flag("epochs", po::value<int>()->default_value(1), "Epochs.", "RUNNER_TEST_EPOCHS")
      .flag("dry-run", nullptr, "Do nothing.")
      .positional("file", 1);
  return cl;
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    demo().parse(args);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CommandLine, FlagsAndPositionalsArrive) {
  CommandLine cl = demo();
  ASSERT_TRUE(cl.parse({"exp.yaml", "--epochs", "3", "--dry-run"}));
  EXPECT_EQ(cl.get<int>("epochs"), 3);
  EXPECT_TRUE(cl.has("dry-run"));
  EXPECT_EQ(cl.list("file"), std::vector<std::string>{"exp.yaml"});
}

TEST(CommandLine, AnEnvironmentVariableFillsAnAbsentFlag) {
  ::setenv("RUNNER_TEST_EPOCHS", "5", 1);
  CommandLine from_env = demo();
  from_env.parse({"exp.yaml"});
  EXPECT_EQ(from_env.get<int>("epochs"), 5);
  CommandLine given = demo();
  given.parse({"exp.yaml", "--epochs", "2"});
  EXPECT_EQ(given.get<int>("epochs"), 2) << "the command line wins";
  ::unsetenv("RUNNER_TEST_EPOCHS");
}

TEST(CommandLine, AnUnknownFlagSuggestsTheCloseOne) {
  const std::string error = error_of({"--epoch", "3"});
  EXPECT_NE(error.find("runner demo: unknown option '--epoch'"), std::string::npos) << error;
  EXPECT_NE(error.find("--epochs"), std::string::npos) << error;
  EXPECT_NE(error.find("see 'runner demo --help'"), std::string::npos) << error;
}

TEST(CommandLine, AMalformedValueIsOneLine) {
  const std::string error = error_of({"--epochs", "many"});
  EXPECT_EQ(error.rfind("runner demo: ", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(CommandLine, HelpPrintsTheUsageAndStops) {
  CommandLine cl = demo();
  ::testing::internal::CaptureStdout();
  EXPECT_FALSE(cl.parse({"--help"}));
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("usage: runner demo FILE [--epochs N]"), std::string::npos) << out;
  EXPECT_NE(out.find("[env RUNNER_TEST_EPOCHS]"), std::string::npos) << out;
}

}  // namespace
}  // namespace runner::cli
