// Files written whole or appended with every write checked: a reader never sees half a file, a
// failed write leaves no temporary file and is one line naming the file and what to do.

#include <fcntl.h>
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "runner/error.hpp"
#include "temp_files.hpp"
#include "util/atomic_file.hpp"

namespace runner::util {
namespace {

namespace fs = std::filesystem;

std::string contents_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AtomicFile, TheOldFileStaysUntilCommit) {
  runner::testing::TempDir dir;
  const fs::path path = dir.path() / "summary.json";
  write_file_atomically(path.string(), "old\n");
  {
    AtomicFile file(path.string());
    file.write("new\n", 4);
    EXPECT_EQ(contents_of(path), "old\n")
        << "readers see the old file while the new one is written";
    file.commit();
  }
  EXPECT_EQ(contents_of(path), "new\n");
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(AtomicFile, AFileNotCommittedLeavesNothing) {
  runner::testing::TempDir dir;
  const fs::path path = dir.path() / "best.pt";
  {
    AtomicFile file(path.string());
    file.write("partial", 7);
  }  // an exception went past it
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
}

TEST(AtomicFile, AFailedWriteIsReportedAtCommitNamingTheFile) {
  runner::testing::TempDir dir;
  const fs::path path = dir.path() / "last.pt";
  // A file size limit makes write() fail with EFBIG (as a full disk fails with ENOSPC).
  struct rlimit old {};
  ::getrlimit(RLIMIT_FSIZE, &old);
  struct rlimit small = old;
  small.rlim_cur = 1024;
  ::setrlimit(RLIMIT_FSIZE, &small);
  ::signal(SIGXFSZ, SIG_IGN);
  std::string what;
  {
    AtomicFile file(path.string());
    const std::string big(4096, 'x');
    file.write(big.data(), big.size());  // remembered, not thrown: torch's writer calls this
    try {
      file.commit();
    } catch (const Error& e) {
      what = e.what();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, SIG_DFL);
  EXPECT_EQ(what.rfind("cannot write " + path.string() + ": ", 0), 0u) << what;
  EXPECT_FALSE(fs::exists(path.string() + ".tmp")) << "the temporary file is removed";
  EXPECT_FALSE(fs::exists(path));
}

TEST(WriteFailure, SaysWhatToDo) {
  EXPECT_NE(write_failure("/r/m.jsonl", ENOSPC).find("the disk is full"), std::string::npos);
  EXPECT_NE(write_failure("/r/m.jsonl", EACCES).find("no permission to write in /r"),
            std::string::npos);
  EXPECT_NE(write_failure("/r/m.jsonl", EROFS).find("read-only"), std::string::npos);
  EXPECT_EQ(write_failure("/r/m.jsonl", EIO).rfind("cannot write /r/m.jsonl: ", 0), 0u);
}

TEST(AppendFile, EveryAppendReachesTheFile) {
  runner::testing::TempDir dir;
  const fs::path path = dir.path() / "metrics.jsonl";
  AppendFile file(path.string());
  file.append("{\"step\":1}\n");
  EXPECT_EQ(contents_of(path), "{\"step\":1}\n") << "no buffer to flush: a crash keeps it";
  AppendFile again(path.string());
  again.append("{\"step\":2}\n");
  EXPECT_EQ(contents_of(path), "{\"step\":1}\n{\"step\":2}\n");
  AppendFile fresh(path.string(), /*truncate=*/true);
  EXPECT_EQ(contents_of(path), "");
  EXPECT_THROW(AppendFile((dir.path() / "no" / "folder.txt").string()), Error);
}

}  // namespace
}  // namespace runner::util
