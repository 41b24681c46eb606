#pragma once
// One writer per run folder (util/folder_lock): the command that runs, resumes or predicts into
// a run folder holds its lock until it ends; a second one is refused, naming the holder.

#include <string>

namespace runner::run {

/// Holds `dir`'s lock for the rest of this process: a lock a parent handed down (a sweep, the
/// launcher) is adopted, else taken; ConfigError (exit 2) naming the holder when another live
/// command holds it. On a filesystem that does not lock, says so once and goes on. Every process
/// this one starts afterwards holds it too (a launcher's ranks). `command`: what the lock file
/// says holds it.
void hold_run_folder(const std::string& dir, const std::string& command);

/// Whether this process holds `dir`'s lock.
bool holds_run_folder(const std::string& dir);

/// ConfigError when another live command holds `dir` (`what`: how the user named it, e.g.
/// "output.run_dir /x"); nothing when nobody does or this process does.
void refuse_folder_in_use(const std::string& dir, const std::string& what);

}  // namespace runner::run
