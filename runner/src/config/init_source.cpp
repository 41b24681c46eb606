#include "config/init_source.hpp"

#include <filesystem>

#include "config/yaml_json.hpp"
#include "runner/error.hpp"

namespace runner::config {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool is_safetensors(const fs::path& file) { return file.extension() == ".safetensors"; }

// The run folder a checkpoint file lies in (RUN/checkpoints/x.pt), or "".
std::string run_folder_of(const fs::path& file) {
  const fs::path folder = file.parent_path();
  std::error_code ec;
  if (folder.filename() == "checkpoints" &&
      fs::is_regular_file(folder.parent_path() / "config.yaml", ec))
    return folder.parent_path().string();
  return "";
}

// The backbone a run folder's config.yaml names, or "" when it cannot be read.
std::string backbone_of_run(const std::string& run_dir) {
  try {
    SourceMap marks;
    const json doc = load_yaml_file((fs::path(run_dir) / "config.yaml").string(), marks);
    const json::json_pointer backbone("/model/backbone");
    return doc.contains(backbone) && doc.at(backbone).is_string()
               ? doc.at(backbone).get<std::string>()
               : "";
  } catch (const ConfigError&) {
    return "";
  }
}

// A run folder's checkpoint for `weights` (best, last, ema), or an export's model.safetensors.
fs::path checkpoint_in_folder(const fs::path& folder, const std::string& weights) {
  std::error_code ec;
  const fs::path best = folder / "checkpoints" / "best.pt";
  const fs::path last = folder / "checkpoints" / "last.pt";
  if (!fs::is_directory(folder / "checkpoints", ec) &&
      fs::is_regular_file(folder / "model.safetensors", ec) && weights == "best")
    return folder / "model.safetensors";  // what `runner export` wrote
  if (weights == "last" || (weights == "ema" && !fs::is_regular_file(best, ec))) {
    if (fs::is_regular_file(last, ec)) return last;
    throw ConfigError("folder " + folder.string() +
                      " holds no checkpoints/last.pt: name a run folder (runs/<name>/<time>) or "
                      "a checkpoint file");
  }
  if (weights == "ema" || fs::is_regular_file(best, ec)) return best;
  throw ConfigError("run " + folder.string() +
                    " has no checkpoints/best.pt (no validation picked best weights)" +
                    (fs::is_regular_file(last, ec) ? ": set model.init_from_weights: last"
                                                   : ": name a run folder or a checkpoint file"));
}

}  // namespace

std::string InitSource::describe() const {
  return file + " (" + (ema ? "its EMA average" : weights + " weights") + ")";
}

std::optional<InitSource> init_source(const json& model_section) {
  const auto value = model_section.find("init_from");
  if (value == model_section.end() || !value->is_string() || value->get<std::string>().empty())
    return std::nullopt;
  InitSource source;
  source.source = value->get<std::string>();
  source.weights = model_section.value("init_from_weights", std::string("best"));
  source.ema = source.weights == "ema";
  std::error_code ec;
  const fs::path path(source.source);
  if (fs::is_directory(path, ec)) {
    source.file = checkpoint_in_folder(path, source.weights).string();
    if (!is_safetensors(source.file)) source.run_dir = path.string();
  } else {
    source.file = source.source;
    source.run_dir = run_folder_of(path);
  }
  return source;
}

void check_init_from(const Experiment& e) {
  const json& model = e.doc.at("model");
  if (!model.value("init_from", json()).is_string()) return;
  const std::string where = e.marks.value_mark("/model/init_from").to_string();
  const auto fail = [&](const std::string& message) {
    throw ConfigError(where + ": model.init_from: " + message);
  };
  const json pretrained = model.value("pretrained", json(false));
  if (pretrained != json(false))
    fail("model.pretrained is set too (" + e.marks.value_mark("/model/pretrained").to_string() +
         "): a run starts from one set of weights; remove one of them");
  std::optional<InitSource> source;
  try {
    source = init_source(model);
  } catch (const ConfigError& error) {
    fail(error.what());
  }
  if (!source) return;
  std::error_code ec;
  if (!fs::exists(source->source, ec))
    fail(source->source +
         " does not exist (a run folder, one of its checkpoints/*.pt or a "
         ".safetensors file)");
  if (!fs::is_directory(source->source, ec)) {
    const std::string weights_where = e.marks.value_mark("/model/init_from_weights").to_string();
    if (source->weights == "last")
      throw ConfigError(weights_where +
                        ": model.init_from_weights: last picks a run folder's last.pt, but "
                        "model.init_from names the file " +
                        source->file + ": name the run folder, or the last.pt file itself");
    if (source->ema && is_safetensors(source->file))
      throw ConfigError(weights_where +
                        ": model.init_from_weights: ema reads the average a runner checkpoint "
                        "kept, but " +
                        source->file + " is a .safetensors file (one set of weights)");
  }
  if (source->run_dir.empty()) return;
  const std::string theirs = backbone_of_run(source->run_dir);
  const std::string ours = model.at("backbone").get<std::string>();
  if (!theirs.empty() && theirs != ours)
    fail("run " + source->run_dir + " trained " + theirs + ", but model.backbone is " + ours +
         ": start from a run of the same backbone (model.pretrained takes timm weights)");
}

}  // namespace runner::config
