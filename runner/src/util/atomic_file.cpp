#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runner/error.hpp"

namespace runner::util {
namespace {

// Writes all of it, retrying short writes; the errno of the failure, or 0.
int write_all(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

std::string folder_of(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return folder.empty() ? "." : folder;
}

}  // namespace

std::string write_failure(const std::string& path, int error) {
  std::string what = "cannot write " + path + ": " + std::strerror(error);
  switch (error) {
    case ENOSPC:
      return what + " (the disk is full: free space there, or set output.root to another disk)";
    case EDQUOT:
      return what + " (your disk quota is used up: free space, or set output.root elsewhere)";
    case EACCES:
    case EPERM:
      return what + " (no permission to write in " + folder_of(path) +
             ": set output.root to a folder you can write)";
    case EROFS:
      return what + " (a read-only file system: set output.root to a writable folder)";
    default:
      return what;
  }
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(write_failure(path_, errno));
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  if (error_ == 0) error_ = write_all(fd_, data, size);
}

void AtomicFile::commit() {
  if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
  const int closed = ::close(fd_);
  fd_ = -1;
  if (error_ == 0 && closed != 0) error_ = errno;
  if (error_ == 0 && ::rename(tmp_.c_str(), path_.c_str()) != 0) error_ = errno;
  if (error_ != 0) {
    ::unlink(tmp_.c_str());
    throw Error(write_failure(path_, error_));
  }
  committed_ = true;
  // The rename itself reaches the disk with its folder.
  const int dir = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  AtomicFile file(path);
  file.write(text.data(), text.size());
  file.commit();
}

AppendFile::AppendFile(std::string path, bool truncate) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0),
               0644);
  if (fd_ < 0) throw Error(write_failure(path_, errno));
}

AppendFile::~AppendFile() { close(); }

AppendFile::AppendFile(AppendFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AppendFile& AppendFile::operator=(AppendFile&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void AppendFile::append(const void* data, size_t size) {
  if (fd_ < 0) throw Error("internal: " + path_ + " is not open for appending");
  if (const int error = write_all(fd_, data, size); error != 0)
    throw Error(write_failure(path_, error));
}

void AppendFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace runner::util
