#pragma once
// Versions, devices and threads, as `runner env` prints them and each run saves.

#include <nlohmann/json.hpp>

namespace runner::cli {

nlohmann::json environment_report();

}  // namespace runner::cli
