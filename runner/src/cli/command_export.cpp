#include <filesystem>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/experiment.hpp"
#include "models/pretrained.hpp"
#include "run/build_run_parts.hpp"
#include "runner/error.hpp"
#include "train/checkpoint.hpp"

namespace runner::cli {
namespace fs = std::filesystem;

int command_export(const Args& args) {
  CommandLine cl(
      "export", "RUN_DIR|CHECKPOINT [--output FILE.safetensors]",
      "Writes a trained checkpoint's model as safetensors with timm's state_dict names,\n"
      "loadable by timm (timm.create_model(..., pretrained_cfg_overlay=dict(file=FILE)))\n"
      "or by runner's model.pretrained. A run directory exports checkpoints/best.pt\n"
      "(else last.pt); the model is rebuilt from the run's config.yaml.");
  cl.flag("output,o", po::value<std::string>(), "Output file (default: RUN_DIR/model.safetensors)")
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
  const nlohmann::json& model_section = experiment.doc.at("model");
  // The checkpoint has the weights: no data, no optimizer, no model.pretrained. (A timm/<name>
  // model keeps its import's arguments: the cached module is found again, not imported anew.)
  run::PartsRequest request;
  request.data = false;
  request.pretrained = false;
  request.training = false;
  const auto model = run::build_run_parts(experiment, request).model;
  train::load_checkpoint(checkpoint.string(), *model, nullptr);
  const fs::path output =
      cl.has("output") ? fs::path(cl.get<std::string>("output")) : run_dir / "model.safetensors";
  models::save_model_safetensors(*model, output.string(),
                                 {{"format", "pt"},
                                  {"architecture", model_section.at("backbone").get<std::string>()},
                                  {"source", checkpoint.string()}});
  std::cout << "wrote " << output.string() << " ("
            << model_section.at("backbone").get<std::string>() << ", timm state_dict names)\n";
  return 0;
}

}  // namespace runner::cli
