#include "run/preflight.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <torch/cuda.h>

#include "config/pretrained_source.hpp"
#include "output/run_summary.hpp"
#include "run/build_run_parts.hpp"
#include "run/run_folder_lock.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"
#include "train/training_position.hpp"
#include "util/atomic_file.hpp"
#include "util/folder_lock.hpp"

namespace runner::run {
namespace {

namespace fs = std::filesystem;

// What `runner sweep` puts in a point's folder before the point's run starts.
constexpr const char* kSweepPointLog = "output.log";

// The entries of `dir` that make it somebody's: everything but a sweep point's log.
std::vector<std::string> occupants(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename() != kSweepPointLog && entry.path().filename() != util::kRunLockFile)
      names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

bool holds_run(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "config.yaml", ec) || fs::exists(dir / "summary.json", ec) ||
         fs::exists(dir / "checkpoints", ec);
}

// Where the run's key is set, for the error's first words.
std::string where(const config::Experiment& e, const std::string& pointer) {
  return e.marks.value_mark(pointer).to_string() + ": ";
}

// Why `dir` cannot be a new run's folder, or "" when it can.
std::string refusal(const config::Experiment& e, const RunOptions& options, const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return "";
  if (!fs::is_directory(dir, ec))
    return where(e, "/output/run_dir") + "output.run_dir " + dir.string() +
           " is a file, not a folder: choose a folder for the run";
  const std::vector<std::string> names = occupants(dir);
  if (names.empty()) return "";
  if (holds_run(dir)) {
    if (options.overwrite) return "";
    const nlohmann::json summary = output::read_summary(dir);
    const bool finished = summary.value("status", "") == "finished";
    return where(e, "/output/run_dir") + "output.run_dir " + dir.string() + " holds another run (" +
           output::run_status_text(summary) + "): a new run never writes into another's folder; " +
           (finished ? "train it longer with 'runner run --resume " + dir.string() +
                           " --set train.epochs=N'"
                     : "continue it with 'runner run --resume " + dir.string() + "'") +
           ", choose another output.run_dir, or add --overwrite to replace it";
  }
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 3; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 3) listed += ", ...";
  return where(e, "/output/run_dir") + "output.run_dir " + dir.string() + " is not empty (" +
         std::to_string(names.size()) + (names.size() == 1 ? " entry: " : " entries: ") + listed +
         ") and holds no run: runner writes a run into a new or empty folder only (--overwrite "
         "replaces run folders alone); choose another output.run_dir";
}

// `value` (output.root or output.run_dir) can be made and written: the nearest folder of it
// that exists lets this user create what is missing below it.
void check_writable(const config::Experiment& e, const std::string& key, const fs::path& value) {
  fs::path probe = fs::absolute(value);
  std::error_code ec;
  while (!fs::exists(probe, ec) && probe.has_parent_path() && probe != probe.parent_path())
    probe = probe.parent_path();
  const std::string head = where(e, key == "output.run_dir" ? "/output/run_dir" : "/output/root") +
                           key + " " + value.string() + ": ";
  if (!fs::is_directory(probe, ec))
    throw ConfigError(head + probe.string() + " is a file, not a folder: set " + key +
                      " to a folder");
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(head + "cannot write in " + probe.string() + " (" + std::strerror(errno) +
                      "): set " + key + " to a folder you can write");
}

}  // namespace

void check_devices(const config::Experiment& e) {
  const config::LaunchOptions& launch = e.options.launch;
  // Two ranks on one GPU work over Gloo (it stages CUDA tensors through host memory); NCCL
  // refuses them ("Duplicate GPU detected") only once the first collective runs: say so first.
  const bool cuda =
      launch.device == "cuda" || (launch.device == "auto" && torch::cuda::is_available());
  const auto& ids = launch.gpu_ids;
  for (size_t i = 0; cuda && launch.backend != "gloo" && i < ids.size(); ++i)
    for (size_t j = i + 1; j < ids.size(); ++j)
      if (ids[i] == ids[j])
        throw ConfigError(where(e, "/launch/gpu_ids") + "launch.gpu_ids gives local ranks " +
                          std::to_string(i) + " and " + std::to_string(j) + " the same GPU " +
                          std::to_string(ids[i]) +
                          ": NCCL refuses two ranks on one GPU (launch.backend " + launch.backend +
                          " uses NCCL on CUDA); set launch.backend=gloo to share a GPU");
  train::require_cuda_if_asked(launch, where(e, "/launch/device"));
  train::require_cuda_for_nccl(launch, where(e, "/launch/backend"));
  train::require_cuda_for_data_device(e.options, where(e, "/data/device"));
}

void check_output_folder(const config::Experiment& e, const RunOptions& options) {
  const config::OutputOptions& output = e.options.output;
  if (options.resume) {
    refuse_folder_in_use(options.resume_dir, "runner run --resume " + options.resume_dir);
    return check_writable(e, "output.run_dir", options.resume_dir);
  }
  if (output.run_dir) {
    refuse_folder_in_use(*output.run_dir,
                         where(e, "/output/run_dir") + "output.run_dir " + *output.run_dir);
    if (const std::string why = refusal(e, options, *output.run_dir); !why.empty())
      throw ConfigError(why);
    return check_writable(e, "output.run_dir", *output.run_dir);
  }
  check_writable(e, "output.root", output.root);
}

void check_model(const config::Experiment& e) {
  if (!config::is_scripted_backbone(describe_run_parts(e).backbone)) return;
  PartsRequest model_only;
  model_only.data = false;
  model_only.training = false;
  try {
    build_run_parts(e, model_only);
  } catch (const ConfigError& error) {  // timm's reason ("timm/x: timm 1.0 has no model ...")
    const std::string what = error.what();
    if (what.rfind(describe_run_parts(e).backbone + ": ", 0) != 0) throw;
    throw ConfigError(e.marks.written_mark("/model/backbone").to_string() + ": model.backbone " +
                      what);
  }
}

void check_checkpoint(const config::Experiment& e, const std::string& path,
                      std::optional<int> world_size) {
  PartsRequest model_only;
  model_only.data = false;
  model_only.pretrained = false;
  model_only.training = false;
  const auto model = build_run_parts(e, model_only).model;
  try {
    const train::CheckpointContent content = train::load_checkpoint(path, *model, nullptr);
    if (world_size) train::CheckpointState::from_json(content.meta, path, *world_size);
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& error) {  // DataError: missing, truncated, another model's
    throw ConfigError(error.what());
  }
}

void check_run_to_continue(const config::ResumePlan& plan) {
  const std::string last = (fs::path(plan.run_dir) / "checkpoints" / "last.pt").string();
  train::TrainingPosition at;
  try {
    at = train::TrainingPosition::from_json(train::read_checkpoint_meta(last));
  } catch (const std::exception&) {
    return;  // a missing or damaged last.pt: check_checkpoint says so, naming the file
  }
  const config::TrainOptions& train = plan.experiment.options.train;
  const bool all_epochs = at.epoch >= train.epochs;
  const bool all_steps = train.max_steps && at.optimizer_steps >= *train.max_steps;
  if (!all_epochs && !all_steps) return;
  const std::string where =
      all_steps ? "at train.max_steps " + std::to_string(*train.max_steps) + " optimizer steps"
                : "after its " + std::to_string(train.epochs) + " epoch(s)";
  throw ConfigError("runner run --resume " + plan.run_dir + ": the run finished " + where +
                    ": nothing is left to continue; to train it longer: runner run --resume " +
                    plan.run_dir +
                    (all_steps ? " --set train.max_steps=" + std::to_string(*train.max_steps * 2)
                               : " --set train.epochs=" + std::to_string(train.epochs * 2)) +
                    "; to predict again: runner predict " + plan.run_dir);
}

void claim_run_folder(const config::Experiment& e, const RunOptions& options,
                      const std::string& dir) {
  if (const std::string why = refusal(e, options, dir); !why.empty()) throw ConfigError(why);
  if (!options.overwrite || !holds_run(dir)) return;
  // --overwrite: the run it replaces goes whole (a sweep point's log of this run stays).
  for (const std::string& name : occupants(dir)) {
    std::error_code ec;
    fs::remove_all(fs::path(dir) / name, ec);
    if (ec) throw Error(util::write_failure((fs::path(dir) / name).string(), ec.value()));
  }
}

}  // namespace runner::run
