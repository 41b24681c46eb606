#include "run/run_folder_lock.hpp"

#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "runner/error.hpp"
#include "util/folder_lock.hpp"

namespace runner::run {
namespace fs = std::filesystem;

namespace {

// The lock this process holds, kept to its end (the kernel drops it then, however it ends).
std::optional<util::FolderLock>& held() {
  static std::optional<util::FolderLock> lock;
  return lock;
}

bool same_folder(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

std::string in_use(const std::string& what, const std::string& holder) {
  return what + " is in use by " + holder +
         ": a run folder has one writer at a time; wait for that command to end (or stop it), "
         "then run this again";
}

// Whether this process holds `dir`, adopting the lock a parent handed down for it (a sweep's).
bool holds_or_adopts(const std::string& dir) {
  if (held() && same_folder(held()->folder(), dir)) return true;
  if (auto handed = util::adopt_handed_lock(dir)) {
    held() = std::move(*handed);
    return true;
  }
  return false;
}

}  // namespace

bool holds_run_folder(const std::string& dir) {
  return held() && same_folder(held()->folder(), dir);
}

void hold_run_folder(const std::string& dir, const std::string& command) {
  if (holds_or_adopts(dir)) return;
  util::LockAttempt attempt = util::try_lock_folder(dir, command);
  if (!attempt.lock) throw ConfigError(in_use(dir, attempt.holder));
  if (!attempt.lock->effective())
    spdlog::warn(
        "{}: its filesystem does not lock files ({}): a second command on this run folder would "
        "not be stopped (on Lustre, mount with -o flock)",
        dir, attempt.lock->why_not());
  util::hand_down_to_children(*attempt.lock);
  held() = std::move(*attempt.lock);
}

void refuse_folder_in_use(const std::string& dir, const std::string& what) {
  if (holds_or_adopts(dir)) return;
  if (const std::string holder = util::folder_lock_holder(dir); !holder.empty())
    throw ConfigError(in_use(what, holder));
}

}  // namespace runner::run
