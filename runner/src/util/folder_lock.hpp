#pragma once
// One writer per run folder: the process that runs a folder holds FOLDER/run.lock, an
// open-file-description lock (fcntl F_OFD_SETLK) that the kernel drops when the last process
// holding it ends, however it ends. Such a lock travels with its file descriptor into the
// children a sweep or the launcher starts, and NFSv4 (Linux clients) carries it to the server as
// a POSIX lock, so two machines sharing a folder see it. The file also says who holds it (host,
// pid, since when, the command) for the refusal the second command prints. Torch-free.

#include <optional>
#include <string>

namespace runner::util {

/// The name of the lock file inside a run folder.
inline constexpr const char* kRunLockFile = "run.lock";
/// The variable through which a process hands its held lock to the `runner run` it starts:
/// "FD:PATH" of the inherited descriptor.
inline constexpr const char* kHeldLockVar = "RUNNER_HELD_RUN_LOCK";

/// A held lock on FOLDER/run.lock; released when destroyed (or when the process ends).
class FolderLock {
 public:
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&& other) noexcept;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();

  int fd() const { return fd_; }
  const std::string& folder() const { return folder_; }
  /// Whether the filesystem holds locks at all; false: the lock guards nothing (`why_not`).
  bool effective() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }

 private:
  friend struct FolderLockAccess;
  FolderLock(int fd, std::string folder, std::string why_not);
  int fd_ = -1;
  std::string folder_;
  std::string why_not_;
};

/// What trying for a folder's lock found.
struct LockAttempt {
  std::optional<FolderLock> lock;  ///< held: ours now
  std::string holder;  ///< not held: "runner sweep (pid 12, host a, since ...)", from the file
};

/// Tries for `folder`'s lock without waiting (the folder is made when missing); `command` is
/// what the file says holds it. A filesystem that does not lock gives a lock that is not
/// effective() rather than an error. Throws runner::Error when the file cannot be written.
LockAttempt try_lock_folder(const std::string& folder, const std::string& command);

/// Waits for `folder`'s lock (another command's run ends), then holds it.
FolderLock wait_for_folder_lock(const std::string& folder, const std::string& command);

/// Who holds `folder`'s lock now ("" when nobody does), without taking it.
std::string folder_lock_holder(const std::string& folder);

/// The lock a parent handed down for `folder` (kHeldLockVar names this folder's lock file, its
/// descriptor open here), adopted as ours; nothing when none was.
std::optional<FolderLock> adopt_handed_lock(const std::string& folder);

/// "FD:PATH" for kHeldLockVar; the child must inherit fd (ChildSpec::inherited_fd).
std::string handed_lock_value(const FolderLock& lock);

/// Every process this one starts from now on inherits the lock and kHeldLockVar (a launcher's
/// ranks): they hold it with us, and the main rank adopts it instead of asking again.
void hand_down_to_children(const FolderLock& lock);

}  // namespace runner::util
