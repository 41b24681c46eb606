#include "config/pretrained_source.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "runner/error.hpp"

namespace runner::config {
namespace fs = std::filesystem;

namespace {

constexpr const char* kHubPrefix = "hf-hub:";

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string fill_cache_hint(const std::string& repo) {
  return "fill the cache on a machine with internet access: `hf download " + repo +
         " model.safetensors` (or `huggingface-cli download " + repo +
         " model.safetensors`), then copy its hub folder to " + hf_hub_cache_dir() +
         " (or point HF_HUB_CACHE at it)";
}

}  // namespace

std::string hf_hub_cache_dir() {
  if (const std::string cache = env_or_empty("HF_HUB_CACHE"); !cache.empty()) return cache;
  if (const std::string home = env_or_empty("HF_HOME"); !home.empty())
    return (fs::path(home) / "hub").string();
  const std::string home = env_or_empty("HOME");
  return (fs::path(home.empty() ? "/root" : home) / ".cache" / "huggingface" / "hub").string();
}

std::string timm_default_tag(const std::string& backbone) {
  // timm 1.0.31's default_cfgs: the first tag of each architecture runner ships
  // (tests/unit/timm checks this table against the installed timm).
  static const std::map<std::string, std::string> tags = {
      {"convnext_atto", "d2_in1k"},
      {"convnext_femto", "d1_in1k"},
      {"convnext_pico", "d1_in1k"},
      {"convnext_nano", "in12k_ft_in1k"},
      {"convnext_tiny", "in12k_ft_in1k"},
      {"convnext_small", "in12k_ft_in1k"},
      {"convnext_base", "fb_in22k_ft_in1k"},
      {"resnet10t", "c3_in1k"},
      {"resnet14t", "c3_in1k"},
      {"resnet18", "a1_in1k"},
      {"resnet26", "bt_in1k"},
      {"resnet34", "a1_in1k"},
      {"resnet50", "a1_in1k"},
  };
  auto it = tags.find(backbone);
  return it == tags.end() ? "" : it->second;
}

std::string hf_hub_cached_file(const std::string& repo) {
  const auto slash = repo.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == repo.size())
    throw ConfigError("'" + std::string(kHubPrefix) + repo +
                      "' is not a hub name: write hf-hub:timm/<model>.<tag>");
  const fs::path folder = fs::path(hf_hub_cache_dir()) /
                          ("models--" + repo.substr(0, slash) + "--" + repo.substr(slash + 1));
  const fs::path ref = folder / "refs" / "main";
  std::ifstream in(ref);
  std::string revision;
  if (!in || !std::getline(in, revision) || trimmed(revision).empty())
    throw ConfigError("no weights for " + repo + " in the Hugging Face cache: " + ref.string() +
                      " is missing; " + fill_cache_hint(repo));
  const fs::path snapshot = folder / "snapshots" / trimmed(revision);
  const fs::path file = snapshot / "model.safetensors";
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) return file.string();
  if (fs::exists(snapshot / "pytorch_model.bin", ec))
    throw ConfigError("the cached " + repo + " holds pytorch_model.bin only (" + snapshot.string() +
                      "); runner reads model.safetensors: " + fill_cache_hint(repo));
  throw ConfigError("no weights for " + repo + " in the Hugging Face cache: " + file.string() +
                    " is missing; " + fill_cache_hint(repo));
}

namespace {

/// `text` as an absolute path, relative ones taken from the experiment file's folder.
fs::path from_experiment_dir(const Experiment& e, const std::string& text) {
  fs::path path(text);
  if (path.is_relative() && !e.dir.empty()) path = fs::path(e.dir) / path;
  return fs::absolute(path).lexically_normal();
}

/// The weights a folder offers: an export's model.safetensors, else a run's best checkpoint,
/// else its last (a run that ended before its first validation has no best.pt).
fs::path weights_in_folder(const fs::path& folder) {
  std::error_code ec;
  for (const char* name : {"model.safetensors", "checkpoints/best.pt", "checkpoints/last.pt"})
    if (fs::is_regular_file(folder / name, ec)) return folder / name;
  throw ConfigError("folder " + folder.string() +
                    " holds no model.safetensors and no checkpoints/best.pt or last.pt (a run "
                    "folder, or one runner export wrote): name the weights file");
}

/// timm/<name> and torchscript: the weights come with the module; only files are resolved.
void resolve_scripted(Experiment& e, nlohmann::json& model, const std::string& backbone) {
  std::error_code ec;
  if (backbone == "torchscript") {
    const fs::path path = from_experiment_dir(e, model.at("path").get<std::string>());
    if (!fs::is_regular_file(path, ec))
      throw ConfigError(e.marks.value_mark("/model/path").to_string() + ": model.path: " +
                        path.string() + " does not exist (a file saved by torch.jit.save)");
    model["path"] = path.string();
    return;
  }
  // The registry's family entry itself (timm/*) is listed by `runner plugins`: not a model.
  if (const std::string name = backbone.substr(5); name.empty() || name.find('*') != name.npos)
    throw ConfigError(e.marks.value_mark("/model/backbone").to_string() + ": model.backbone " +
                      backbone + " names no model: write timm/ and one of timm's names, e.g. " +
                      "timm/efficientnet_b0 (python -c 'import timm; print(timm.list_models())')");
  nlohmann::json& value = model["pretrained"];
  if (!value.is_string() || value.get<std::string>().rfind(kHubPrefix, 0) == 0) return;
  const fs::path path = from_experiment_dir(e, value.get<std::string>());
  if (!fs::is_regular_file(path, ec))
    throw ConfigError(e.marks.value_mark("/model/pretrained").to_string() +
                      ": model.pretrained: " + path.string() +
                      " does not exist (a weights file timm loads, true, or "
                      "hf-hub:timm/<model>.<tag>)");
  value = path.string();
}

}  // namespace

void resolve_pretrained(Experiment& e) {
  nlohmann::json& model = e.doc.at("model");
  if (const std::string backbone = model.at("backbone").get<std::string>();
      is_scripted_backbone(backbone))
    return resolve_scripted(e, model, backbone);
  nlohmann::json& value = model["pretrained"];
  const std::string where =
      e.marks.value_mark("/model/pretrained").to_string() + ": model.pretrained: ";
  try {
    if (value.is_boolean()) {
      if (!value.get<bool>()) return;
      const std::string backbone = model.at("backbone").get<std::string>();
      const std::string tag = timm_default_tag(backbone);
      if (tag.empty())
        throw ConfigError("runner knows no timm default weights for '" + backbone +
                          "': name them, e.g. pretrained: hf-hub:timm/" + backbone +
                          ".<tag>, or give a .safetensors file");
      value = hf_hub_cached_file("timm/" + backbone + "." + tag);
      return;
    }
    if (!value.is_string()) return;
    const std::string text = value.get<std::string>();
    if (text.rfind(kHubPrefix, 0) == 0) {
      value = hf_hub_cached_file(text.substr(std::string(kHubPrefix).size()));
      return;
    }
    fs::path path(text);
    if (path.is_relative() && !e.dir.empty()) path = fs::path(e.dir) / path;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      path = weights_in_folder(path);
    } else if (!fs::is_regular_file(path, ec)) {
      throw ConfigError(path.string() +
                        " does not exist (a .safetensors file, a run folder or its "
                        "checkpoint .pt, a folder holding model.safetensors, true or "
                        "hf-hub:timm/<model>.<tag>)");
    }
    value = fs::absolute(path).lexically_normal().string();
  } catch (const ConfigError& err) {
    throw ConfigError(where + err.what());
  }
}

}  // namespace runner::config
