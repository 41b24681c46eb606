#include "train/trial_reports.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "dist/world.hpp"
#include "train/stop_request.hpp"
#include "util/atomic_file.hpp"

namespace runner::train {
namespace fs = std::filesystem;

TrialReports::TrialReports() {
  if (const char* folder = std::getenv(kTrialReportsVar); folder && *folder) folder_ = folder;
}

std::string TrialReports::after_epoch(dist::World& world, int64_t epoch, double value) const {
  if (!active()) return "";
  std::string why;
  if (world.is_main()) {
    const fs::path dir(folder_);
    const std::string name = "epoch-" + std::to_string(epoch);
    std::error_code ec;
    fs::create_directories(dir, ec);
    util::write_file_atomically((dir / (name + ".json")).string(),
                                nlohmann::json{{"epoch", epoch}, {"value", value}}.dump() + "\n");
    const fs::path decision = dir / (name + ".decision");
    while (!fs::exists(decision, ec) && stop_requested_by() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(decision);
    std::string word;
    if (in >> word && word == "prune") {
      std::getline(in, why);  // the rest of the first line
      std::getline(in, why);
      if (why.empty()) why = "pruned by the sweep's search";
    }
  }
  return dist::broadcast_text(world, why);
}

}  // namespace runner::train
