// The `tensorboard` tracker: the run's scalar records as TensorBoard event files in
// RUN/tensorboard/ (`tensorboard --logdir runs`), under the tags metric_tag() gives.

#include <memory>

#include "runner/trackers/metric_tags.hpp"
#include "runner/trackers/tracker.hpp"
#include "trackers/tfevents_writer.hpp"
#include "trackers/trackers.hpp"

namespace runner::trackers {
namespace {

class TensorBoardTracker : public Tracker {
 public:
  explicit TensorBoardTracker(std::string run_dir) : run_dir_(std::move(run_dir)) {}

  // A resumed run opens a new event file beside the old ones; TensorBoard shows the newest
  // point of each step, so the steps the resumed run trains again read as one history.
  void start(const RunStart&) override {
    events_ = std::make_unique<TfEventsWriter>(std::filesystem::path(run_dir_) / "tensorboard");
  }

  void log(const Record& record) override {
    if (record.kind != "step" && record.kind != "epoch") return;  // "best" is for the report
    for (auto it = record.values.begin(); it != record.values.end(); ++it) {
      const std::string tag = metric_tag(record.kind, it.key());
      if (!it.value().is_number() || tag.empty()) continue;
      events_->add_scalar(tag, it.value().get<double>(), record.step,
                          static_cast<double>(record.unix_ms) / 1000.0);
    }
    events_->flush();
  }

  void finish(const RunEnd&) override { events_.reset(); }

 private:
  std::string run_dir_;
  std::unique_ptr<TfEventsWriter> events_;
};

}  // namespace

void register_tensorboard(Registry<TrackerFactory>& registry) {
  registry.add(
      "tensorboard",
      [](const nlohmann::json&, const TrackerContext& context) -> std::unique_ptr<Tracker> {
        return std::make_unique<TensorBoardTracker>(context.run_dir);
      },
      {{"type", "object"},
       {"additionalProperties", false},
       {"properties", nlohmann::json::object()}},
      "TensorBoard event files in RUN/tensorboard/ (on by default: output.tensorboard)");
}

}  // namespace runner::trackers
