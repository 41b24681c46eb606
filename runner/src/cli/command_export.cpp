#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/experiment.hpp"
#include "models/pretrained.hpp"
#include "output/run_summary.hpp"
#include "run/build_run_parts.hpp"
#include "runner/data/input_normalization.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"

namespace runner::cli {
namespace fs = std::filesystem;
namespace {

// The run's class names (classes.txt, one per line), as a JSON array; null without the file.
nlohmann::json class_names_of(const fs::path& run_dir) {
  std::ifstream in(run_dir / "classes.txt");
  if (!in) return nullptr;
  nlohmann::json names = nlohmann::json::array();
  for (std::string line; std::getline(in, line);) names.push_back(line);
  return names;
}

// The last normalization of the built data.eval_transforms: the mean and std a user feeds the
// model with (timm's pretrained_cfg mean/std), each as a list; null without one.
std::pair<nlohmann::json, nlohmann::json> normalization_of(const data::Pipeline& eval) {
  std::pair<nlohmann::json, nlohmann::json> found{nullptr, nullptr};
  for (const auto& transform : eval.transforms())
    if (const auto* n = dynamic_cast<const data::InputNormalization*>(transform.get()))
      found = {n->input_mean(), n->input_std()};
  return found;
}

}  // namespace

int command_export(const Args& args) {
  CommandLine cl(
      "export", "RUN_DIR|CHECKPOINT [--output FILE.safetensors]",
      "Writes a trained checkpoint's model as safetensors (a timm architecture's with timm's\n"
      "state_dict names); its metadata names the architecture, in_chans, num_classes, the\n"
      "class names, the input size and the eval normalization's mean and std. timm gets the\n"
      "same predictions from a timm architecture's file with\n"
      "  model = timm.create_model(ARCH, in_chans=C, num_classes=N)\n"
      "  model.load_state_dict(safetensors.torch.load_file(FILE))\n"
      "(not pretrained_cfg_overlay: timm's load_pretrained drops a classifier whose class count\n"
      "is not its pretrained config's); runner loads it whole as model.pretrained. A run\n"
      "directory exports checkpoints/best.pt (else last.pt); the model is rebuilt from the\n"
      "run's config.yaml.");
  cl.flag("output,o", po::value<std::string>(), "Output file (default: RUN_DIR/model.safetensors)")
      .flag("weights", po::value<std::string>(),
            "model or ema: the checkpoint's trained weights or train.ema's average (default: "
            "the run's train.best.weights)")
      .positional("source", 1);
  if (!cl.parse(args)) return 0;
  const auto sources = cl.list("source");
  if (sources.size() != 1)
    throw ConfigError(
        "runner export: give a run directory or a checkpoint; see 'runner export --help'");
  fs::path checkpoint = sources[0];
  fs::path run_dir;
  if (fs::is_directory(checkpoint)) {
    run_dir = checkpoint;
    checkpoint = run_dir / "checkpoints" / "best.pt";
    if (!fs::exists(checkpoint)) checkpoint = run_dir / "checkpoints" / "last.pt";
  } else {
    run_dir = checkpoint.parent_path().parent_path();
  }
  if (!fs::exists(checkpoint))
    throw DataError("runner export: no checkpoint at " + checkpoint.string());
  const fs::path config = run_dir / "config.yaml";
  if (!fs::exists(config))
    throw DataError("runner export: " + config.string() +
                    " is missing: export needs the run directory's "
                    "config.yaml to rebuild the model");
  auto experiment = config::load_experiment(config.string());
  // The checkpoint has the weights: no data, no optimizer, no model.pretrained. (A timm/<name>
  // model keeps its import's arguments: the cached module is found again, not imported anew.)
  run::PartsRequest request;
  request.data = false;
  request.pretrained = false;
  request.training = false;
  const train::RunParts parts = run::build_run_parts(experiment, request);
  const std::string weights = cl.get_or("weights", experiment.options.train.best.weights);
  if (weights != "model" && weights != "ema")
    throw ConfigError("runner export: --weights " + weights + ": expected model or ema");
  train::load_checkpoint(checkpoint.string(), *parts.model, nullptr,
                         train::parse_checkpoint_weights(weights));
  const fs::path output =
      cl.has("output") ? fs::path(cl.get<std::string>("output")) : run_dir / "model.safetensors";
  std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                 {"architecture", parts.about.backbone},
                                                 {"source", checkpoint.string()},
                                                 {"weights", weights}};
  if (parts.about.model_options) {
    metadata["in_chans"] = std::to_string(parts.about.model_options->in_chans);
    metadata["num_classes"] = std::to_string(parts.about.model_options->num_classes);
  }
  // The images the model trained on, as the run recorded them: [channels, height, width].
  const nlohmann::json summary = output::read_summary(run_dir);
  if (summary.contains("input_size")) metadata["input_size"] = summary["input_size"].dump();
  if (const nlohmann::json names = class_names_of(run_dir); !names.is_null())
    metadata["class_names"] = names.dump();
  if (const auto [mean, std] = normalization_of(parts.eval_pipeline); !mean.is_null()) {
    metadata["mean"] = mean.dump();
    metadata["std"] = std.dump();
  }
  models::save_model_safetensors(*parts.model, output.string(), metadata);
  // small_cnn is runner's own: timm has no model to load its names into.
  const bool timm_architecture = parts.about.backbone != "small_cnn";
  std::cout << "wrote " << output.string() << " (" << parts.about.backbone
            << (timm_architecture ? ", timm state_dict names"
                                  : ", runner's own model: load it with runner (model.pretrained "
                                    "or model.init_from), timm has no such architecture")
            << ")\n";
  return 0;
}

}  // namespace runner::cli
