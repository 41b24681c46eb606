// One writer per run folder: a held folder refuses a second holder and names the first; the
// lock goes when its holder does (a process that dies included) and passes to a child that
// inherits it.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>

#include "temp_files.hpp"
#include "util/folder_lock.hpp"

namespace runner::util {
namespace {

using runner::testing::TempDir;

TEST(FolderLock, ASecondHolderIsRefusedAndTheFirstNamed) {
  TempDir dir;
  const std::string folder = (dir.path() / "run").string();
  LockAttempt first = try_lock_folder(folder, "runner run a.yaml");
  ASSERT_TRUE(first.lock.has_value());
  ASSERT_TRUE(first.lock->effective()) << first.lock->why_not();
  const LockAttempt second = try_lock_folder(folder, "runner run b.yaml");
  EXPECT_FALSE(second.lock.has_value());
  EXPECT_NE(second.holder.find("runner run a.yaml (pid " + std::to_string(::getpid()) + " on "),
            std::string::npos)
      << second.holder;
  EXPECT_EQ(folder_lock_holder(folder), second.holder);
  first.lock.reset();  // the holder ends
  EXPECT_EQ(folder_lock_holder(folder), "");
  EXPECT_TRUE(try_lock_folder(folder, "runner run b.yaml").lock.has_value());
}

TEST(FolderLock, AProcessThatDiesHoldingItLetsItGo) {
  TempDir dir;
  const std::string folder = (dir.path() / "run").string();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    LockAttempt held = try_lock_folder(folder, "runner sweep s.yaml");
    (void)!::write(ready[1], "x", 1);
    ::pause();  // until killed
    ::_exit(0);
  }
  char byte;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_NE(folder_lock_holder(folder).find("runner sweep s.yaml (pid " + std::to_string(child)),
            std::string::npos);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(folder_lock_holder(folder), "");
  EXPECT_TRUE(try_lock_folder(folder, "runner run").lock.has_value());
}

TEST(FolderLock, AHandedLockIsAdoptedForItsFolderOnly) {
  TempDir dir;
  const std::string folder = (dir.path() / "run").string();
  LockAttempt held = try_lock_folder(folder, "runner sweep s.yaml");
  ASSERT_TRUE(held.lock.has_value());
  // What a child inherits: another descriptor of the same open file.
  const int inherited = ::dup(held.lock->fd());
  const std::string path = (dir.path() / "run" / kRunLockFile).string();
  ::setenv(kHeldLockVar, (std::to_string(inherited) + ":" + path).c_str(), 1);
  EXPECT_FALSE(adopt_handed_lock((dir.path() / "other").string()).has_value());
  std::optional<FolderLock> adopted = adopt_handed_lock(folder);
  ::unsetenv(kHeldLockVar);
  ASSERT_TRUE(adopted.has_value());
  EXPECT_EQ(adopted->fd(), inherited);
  // The parent lets go: the child still holds the folder.
  held.lock.reset();
  EXPECT_FALSE(try_lock_folder(folder, "runner run").lock.has_value());
  adopted.reset();
  EXPECT_TRUE(try_lock_folder(folder, "runner run").lock.has_value());
}

}  // namespace
}  // namespace runner::util
