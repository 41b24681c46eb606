#include "run/start_checks.hpp"

#include <spdlog/spdlog.h>

#include "config/experiment_options.hpp"
#include "run/build_run_parts.hpp"
#include "run/cross_key_checks.hpp"
#include "run/one_step_check.hpp"
#include "run/shape_checks.hpp"

namespace runner::run {

std::vector<std::string> check_run_starts(const config::Experiment& e, const train::RunParts& parts,
                                          const RunOptions& options, int world_size) {
  check_data_fits_model(e, parts);
  CrossKeyContext context;
  context.world_size = world_size;
  context.training = !options.predict_only;
  context.predict_input = !options.predict_input.empty();
  std::vector<std::string> warnings = check_cross_keys(e, parts, context);
  if (options.predict_input.empty())
    check_one_step(e, parts, context.training,
                   /*initial_weights=*/!options.resume && options.checkpoint.empty());
  return warnings;
}

std::vector<std::string> check_run_starts(const config::Experiment& e, const RunOptions& options) {
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // quietly: the run logs what the dataset says
  try {
    PartsRequest request;
    request.model = false;  // the step check builds its own, on the CPU
    request.training = false;
    request.data = options.predict_input.empty();
    auto warnings = check_run_starts(e, build_run_parts(e, request), options,
                                     config::world_processes(e.options.launch));
    spdlog::set_level(level);
    return warnings;
  } catch (...) {
    spdlog::set_level(level);
    throw;
  }
}

}  // namespace runner::run
