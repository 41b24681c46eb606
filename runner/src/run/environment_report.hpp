#pragma once
// Versions, devices and threads, as `runner env` prints them and each run saves (env.json).

#include <nlohmann/json.hpp>

namespace runner::run {

nlohmann::json environment_report();

}  // namespace runner::run
