#include "sweep/point_start.hpp"

#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "config/yaml_json.hpp"
#include "run/preflight.hpp"
#include "runner/error.hpp"
#include "util/folder_lock.hpp"
#include "util/local_timestamp.hpp"

namespace runner::sweep {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Why the run in `dir` cannot continue although it saved last.pt (it trained to its end but
// wrote no summary.json), or "" when a resume has work to do.
std::string trained_to_the_end(const fs::path& dir) {
  try {
    run::check_run_to_continue(config::plan_resume("", dir.string(), {}, ""));
    return "";
  } catch (const ConfigError& error) {
    if (std::string(error.what()).find("nothing is left to continue") != std::string::npos)
      return "trained to its end but wrote no summary.json";
    return "";  // what else stops it, its resume says
  } catch (const Error&) {
    return "";  // a damaged last.pt: the resume says so
  }
}

}  // namespace

std::optional<config::KeyChange> changed_config(const fs::path& run_dir, const json& doc) {
  const fs::path saved_path = run_dir / "config.yaml";
  std::ifstream in(saved_path);
  if (!in) return std::nullopt;  // a result without its config (older runner): nothing to compare
  std::stringstream text;
  text << in.rdbuf();
  config::SourceMap marks;
  const json saved = config::parse_yaml(text.str(), saved_path.string(), marks);
  for (const auto& change : config::differing_keys(saved, doc)) {
    // Where the point ran and how it was spread over a machine do not change its answer.
    if (change.key.rfind("output.", 0) == 0 || change.key == "launch.master_port" ||
        change.key == "launch.threads_per_process" || change.key == "launch.gpu_ids" ||
        change.key == "log_level" || change.to == "auto")
      continue;
    return change;
  }
  return std::nullopt;
}

PointStart start_point(const fs::path& run_dir, const json& doc, const std::string& who) {
  std::vector<fs::path> left;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec))
    if (entry.path().filename() != util::kRunLockFile) left.push_back(entry.path());
  if (left.empty()) return {};
  const bool checkpoint = fs::exists(run_dir / "checkpoints" / "last.pt", ec);
  const auto change = checkpoint ? changed_config(run_dir, doc) : std::nullopt;
  const std::string ended = checkpoint && !change ? trained_to_the_end(run_dir) : "";
  if (checkpoint && fs::exists(run_dir / "config.yaml", ec) && !change && ended.empty()) {
    fs::remove(run_dir / "failure.txt", ec);  // the attempt it continues is no longer failed
    return {true, who + " did not finish before: continuing it from its checkpoints/last.pt"};
  }
  // The lock file stays (its holder holds it); the rest of the earlier attempt goes aside.
  const fs::path aside =
      run_dir.parent_path() / (run_dir.filename().string() + ".old-" + util::local_timestamp());
  fs::create_directories(aside);
  for (const fs::path& path : left) {
    fs::rename(path, aside / path.filename(), ec);
    if (ec)
      throw Error(who + ": cannot move " + path.string() + " aside to " + aside.string() + ": " +
                  ec.message());
  }
  std::string why = ended;
  if (!checkpoint) why = "saved no checkpoint";
  if (change)
    why = "ran with another config (" + change->key + " was " + change->from.dump() + ", now " +
          change->to.dump() + ")";
  return {false, fmt::format("{} did not finish before and {}: starting it afresh; what it left "
                             "is kept in {}",
                             who, why, aside.string())};
}

}  // namespace runner::sweep
