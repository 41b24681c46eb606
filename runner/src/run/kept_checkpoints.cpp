#include "run/kept_checkpoints.hpp"

#include <filesystem>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace runner::run {

std::vector<std::pair<std::string, uintmax_t>> keep_checkpoints(const std::string& run_dir,
                                                                const std::string& policy) {
  std::vector<std::pair<std::string, uintmax_t>> kept;
  for (const char* name : {"best.pt", "last.pt"}) {
    const fs::path path = fs::path(run_dir) / "checkpoints" / name;
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    const std::string which = name == std::string("best.pt") ? "best" : "last";
    if (policy == "best_and_last" || policy == which)
      kept.emplace_back(name, fs::file_size(path, ec));
    else
      fs::remove(path, ec);
  }
  return kept;
}

std::string checkpoints_text(const std::vector<std::pair<std::string, uintmax_t>>& kept) {
  if (kept.empty()) return "none kept";
  std::string text;
  for (const auto& [name, bytes] : kept)
    text += fmt::format("{}{} {:.0f} MB", text.empty() ? "" : ", ", name,
                        static_cast<double>(bytes) / 1e6);
  return text;
}

}  // namespace runner::run
