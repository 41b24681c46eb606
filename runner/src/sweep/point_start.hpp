#pragma once
// How a sweep point's run starts in its folder, the same for every executor: an unfinished run
// of the point's config that saved checkpoints/last.pt continues (`runner run --resume`);
// anything else an earlier attempt left goes aside to <folder>.old-<time>/, kept, and the point
// starts afresh. The caller holds the folder (util/folder_lock).

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/resume_plan.hpp"

namespace runner::sweep {

/// How a point's run starts: afresh, or continuing the run an earlier attempt left.
struct PointStart {
  bool resume = false;  ///< `runner run --resume` its folder
  std::string note;     ///< what happened to an earlier attempt, one line ("" if none)
};

/// The first key of the config.yaml saved in `run_dir` that differs from `doc` (what the point
/// would run now), where it runs and how it is spread over a machine aside; none when none does
/// or nothing was saved.
std::optional<config::KeyChange> changed_config(const std::filesystem::path& run_dir,
                                                const nlohmann::json& doc);

/// Readies `run_dir` for the point whose resolved config is `doc` (`who`: "sweep s: point 001",
/// the notes' first words).
PointStart start_point(const std::filesystem::path& run_dir, const nlohmann::json& doc,
                       const std::string& who);

}  // namespace runner::sweep
