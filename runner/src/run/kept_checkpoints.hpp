#pragma once
// What a finished run keeps of its checkpoints (train.checkpoints): both files are written while
// it trains (last.pt to resume an interrupted run, best.pt for the predictions with the best
// weights); at the end the ones not asked for are removed.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace runner::run {

/// Removes from RUN_DIR/checkpoints what `policy` (best_and_last, best, last, none) does not
/// keep; returns the files kept, by name, with their sizes in bytes. Main process only.
std::vector<std::pair<std::string, uintmax_t>> keep_checkpoints(const std::string& run_dir,
                                                                const std::string& policy);

/// "best.pt 198 MB, last.pt 594 MB", or "none kept".
std::string checkpoints_text(const std::vector<std::pair<std::string, uintmax_t>>& kept);

}  // namespace runner::run
