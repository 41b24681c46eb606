#pragma once
// Writing files so that nothing is ever left half-written, and a write that fails says which
// file and why in one line: whole files go through a temporary file beside them and a rename;
// appended files (metrics, event logs) write through to the kernel and check every write.
// Torch-free.

#include <cstddef>
#include <string>

namespace runner::util {

/// "cannot write FILE: REASON" with what to do for the errno a write failed with (a full disk,
/// a quota, no permission, a read-only file system).
std::string write_failure(const std::string& path, int error);

/// A whole file written beside its destination (`path`.tmp) and renamed into place by commit():
/// a reader sees the old file or the new one, never a part. The temporary file is removed when
/// the writer goes without commit() (an error, an exception).
class AtomicFile {
 public:
  /// Throws runner::Error (write_failure) when the temporary file cannot be created.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Writes `size` bytes; a failure is remembered (and reported by commit()), so a caller in the
  /// middle of someone else's writer (torch's archive) can always say it wrote them.
  void write(const void* data, size_t size);
  /// Flushes to the disk and renames into place; throws runner::Error (write_failure) for the
  /// first failed write, removing the temporary file.
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  int error_ = 0;
  bool committed_ = false;
};

/// Writes `text` to `path` as a whole (AtomicFile). Throws runner::Error (write_failure).
void write_file_atomically(const std::string& path, const std::string& text);

/// A file that grows by appends (metrics.jsonl, TensorBoard events): each append goes to the
/// kernel at once (a reader, or a crash, sees every record written so far) and is checked.
class AppendFile {
 public:
  AppendFile() = default;
  /// Opens (creates) `path` for appending; `truncate` starts it empty. Throws runner::Error
  /// (write_failure) when it cannot be opened.
  explicit AppendFile(std::string path, bool truncate = false);
  ~AppendFile();
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&& other) noexcept;

  /// Appends all `size` bytes; throws runner::Error (write_failure) when they cannot be.
  void append(const void* data, size_t size);
  void append(const std::string& text) { append(text.data(), text.size()); }
  bool is_open() const { return fd_ >= 0; }
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace runner::util
