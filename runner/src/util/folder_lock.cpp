#include "util/folder_lock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "runner/error.hpp"

namespace runner::util {
namespace fs = std::filesystem;

struct FolderLockAccess {
  static FolderLock make(int fd, std::string folder, std::string why_not) {
    return FolderLock(fd, std::move(folder), std::move(why_not));
  }
};

FolderLock::FolderLock(int fd, std::string folder, std::string why_not)
    : fd_(fd), folder_(std::move(folder)), why_not_(std::move(why_not)) {}

FolderLock::FolderLock(FolderLock&& other) noexcept
    : fd_(other.fd_), folder_(std::move(other.folder_)), why_not_(std::move(other.why_not_)) {
  other.fd_ = -1;
}

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    folder_ = std::move(other.folder_);
    why_not_ = std::move(other.why_not_);
    other.fd_ = -1;
  }
  return *this;
}

// Closing our descriptor drops the lock unless a child still holds the same open file.
FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

std::string lock_path(const std::string& folder) {
  return (fs::path(folder) / kRunLockFile).string();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// The file says who holds it: rewritten by each holder (a stale one from a holder that died is
// never read: nobody holds its lock).
void say_holder(int fd, const std::string& command) {
  const std::string text =
      nlohmann::json{
          {"command", command}, {"pid", ::getpid()}, {"host", host_name()}, {"since", utc_now()}}
          .dump() +
      "\n";
  if (::ftruncate(fd, 0) != 0) return;  // the words are a courtesy; the lock is what counts
  (void)!::pwrite(fd, text.data(), text.size(), 0);
}

std::string read_holder(const std::string& path) {
  std::string text;
  if (const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) text.assign(buffer, static_cast<size_t>(n));
    ::close(fd);
  }
  const auto said = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!said.is_object() || !said.contains("command"))
    return "another process (it has not said which yet)";
  return said.value("command", "?") + " (pid " + std::to_string(said.value("pid", 0)) + " on " +
         said.value("host", "?") + ", since " + said.value("since", "?") + ")";
}

struct flock whole_file(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;  // to the end, however long
  return fl;
}

// A filesystem without (working) locks answers so: the lock then guards nothing.
bool locks_unsupported(int error) {
  return error == ENOLCK || error == EINVAL || error == ENOSYS || error == EOPNOTSUPP;
}

int open_lock_file(const std::string& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  const std::string path = lock_path(folder);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error("cannot write " + path + ": " + std::strerror(errno) +
                "; check that the folder is writable");
  return fd;
}

}  // namespace

LockAttempt try_lock_folder(const std::string& folder, const std::string& command) {
  const int fd = open_lock_file(folder);
  struct flock fl = whole_file(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &fl) == 0) {
    say_holder(fd, command);
    return {FolderLockAccess::make(fd, folder, ""), ""};
  }
  const int error = errno;
  if (locks_unsupported(error))
    return {FolderLockAccess::make(fd, folder, std::strerror(error)), ""};
  ::close(fd);
  if (error != EAGAIN && error != EACCES)
    throw Error("cannot lock " + lock_path(folder) + ": " + std::strerror(error));
  return {std::nullopt, read_holder(lock_path(folder))};
}

FolderLock wait_for_folder_lock(const std::string& folder, const std::string& command) {
  // Polled, not F_OFD_SETLKW: a Ctrl-C reaches the waiting command at once.
  for (auto pause = std::chrono::milliseconds(50);;
       pause = std::min(pause * 2, std::chrono::milliseconds(1000))) {
    LockAttempt attempt = try_lock_folder(folder, command);
    if (attempt.lock) return std::move(*attempt.lock);
    std::this_thread::sleep_for(pause);
  }
}

std::string folder_lock_holder(const std::string& folder) {
  const std::string path = lock_path(folder);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct flock fl = whole_file(F_WRLCK);
  const bool held = ::fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  ::close(fd);
  return held ? read_holder(path) : "";
}

std::optional<FolderLock> adopt_handed_lock(const std::string& folder) {
  const char* handed = std::getenv(kHeldLockVar);
  if (!handed || !*handed) return std::nullopt;
  const std::string value = handed;
  const size_t colon = value.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const int fd = std::atoi(value.substr(0, colon).c_str());
  struct stat ours {
  }, theirs{};
  // The descriptor must still be this folder's lock file, open (not a number reused since).
  if (::fstat(fd, &ours) != 0 || ::stat(lock_path(folder).c_str(), &theirs) != 0 ||
      ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino)
    return std::nullopt;
  // It stays inheritable, the variable set: the ranks we start hold it with us.
  return FolderLockAccess::make(fd, folder, "");
}

std::string handed_lock_value(const FolderLock& lock) {
  return std::to_string(lock.fd()) + ":" + lock_path(lock.folder());
}

void hand_down_to_children(const FolderLock& lock) {
  if (lock.fd() < 0) return;
  ::fcntl(lock.fd(), F_SETFD, 0);
  ::setenv(kHeldLockVar, handed_lock_value(lock).c_str(), 1);
}

}  // namespace runner::util
