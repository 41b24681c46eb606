#pragma once
// summary.json: the run's account in one file, written by the main process however the run
// ends. "status" says how (finished, interrupted, failed); the rest what it got to. During a
// run it is the file's only writer.

#include <filesystem>

#include <nlohmann/json.hpp>

#include "output/run_observer.hpp"

namespace runner::output {

class SummaryWriter : public RunObserver {
 public:
  /// `base`: what every summary of the run says (run_dir, world_size, precision, batch, ...).
  SummaryWriter(std::filesystem::path run_dir, nlohmann::json base);

  /// The training's account (the best, early stopping, speed, data, gradient sync), kept for
  /// every summary written after it.
  void on_training(const TrainingReport& report) override;
  /// train.profile's summary, as "profile" in every summary written after it.
  void on_profile(const ProfileReport& report) override;
  /// "interrupted", with the signal, where it stopped and the command that continues it.
  void on_stop(const StopRecord& record) override;
  /// "finished" or "failed", with the end's fields.
  void on_end(const RunEnd& end) override;

 private:
  void write(const std::string& status, const nlohmann::json& fields, int64_t optimizer_steps,
             double seconds);

  std::filesystem::path run_dir_;
  nlohmann::json summary_;
};

}  // namespace runner::output
