#pragma once
// A rank's start: it joins its world (the launcher's, or a world of one), logs as that rank,
// is named in ps, and sets its threads, device and the precision that runs there.

#include <memory>
#include <string>
#include <vector>

#include "config/experiment_options.hpp"
#include "log/native_output.hpp"
#include "train/run_parts.hpp"

namespace runner::dist {
class World;
}

namespace runner::run {

/// A line the main process says about the rank's setup once the run's checks have passed.
struct SetupNote {
  bool warning = false;  ///< a warning, else information
  std::string text;
};

struct RankSetup {
  train::RankContext rank;
  int threads = 1;               ///< libtorch's intra-op threads of this rank
  std::string precision_reason;  ///< why the precision that runs is not the config's, or ""
  bool channels_last = false;    ///< train.channels_last as run (auto resolved)
  /// What the main process says of the precision and layout chosen (say_setup_notes).
  std::vector<SetupNote> notes;
  /// libtorch's own lines through runner's logger, tagged by rank, while it lives.
  std::unique_ptr<log::NativeOutputCapture> native_output;
};

/// Who started this world's processes, in a user's words: "runner" (its own launcher, or a
/// single process), "torchrun", "srun", "mpirun".
std::string started_by(const dist::World& world);

/// Joins the world and sets the rank up from `experiment`'s launch section, precision and
/// train.deterministic. Throws ConfigError when the device it names cannot be had.
RankSetup set_up_rank(const config::ExperimentOptions& experiment);

/// Logs `setup`'s notes on the main process: after the checks that may still refuse the run,
/// so that a refusal stays one line.
void say_setup_notes(const RankSetup& setup);

}  // namespace runner::run
