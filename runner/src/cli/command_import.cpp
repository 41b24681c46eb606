#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/command_line.hpp"
#include "cli/commands.hpp"
#include "config/overrides.hpp"
#include "models/timm_import.hpp"
#include "runner/error.hpp"

namespace runner::cli {
namespace fs = std::filesystem;

int command_import(const Args& args) {
  CommandLine cl(
      "import", "timm/NAME [--in-chans N] [--num-classes N] [--pretrained P] [-o FILE]",
      "Builds a timm model with timm itself (in the project's Python: the venv `make deps`\n"
      "creates, or RUNNER_PYTHON) and writes it as TorchScript plus FILE.json, its description.\n"
      "Without -o it goes to the cache `runner run` reads for model.backbone: timm/NAME with the\n"
      "same arguments ($RUNNER_CACHE/timm, else ~/.cache/runner/timm), so a later run needs no\n"
      "Python. Pretrained weights are read offline from the Hugging Face cache.");
  cl.flag("in-chans", po::value<int64_t>()->default_value(3), "Input channels (timm's in_chans)")
      .flag("num-classes", po::value<int64_t>()->default_value(1000), "Classifier outputs")
      .flag("drop-path-rate", po::value<double>()->default_value(0.0), "Stochastic depth rate")
      .flag("pretrained", po::value<std::string>()->default_value("false"),
            "false, true (timm's default tag), hf-hub:timm/NAME.TAG or a weights file")
      .flag("set", po::value<std::vector<std::string>>()->composing(),
            "More create_model arguments: --set model.kwargs.img_size=56")
      .flag("output,o", po::value<std::string>(), "Write here instead of the cache")
      .positional("model", 1);
  if (!cl.parse(args)) return 0;
  const auto names = cl.list("model");
  if (names.size() != 1 || names[0].rfind("timm/", 0) != 0 || names[0].size() <= 5)
    throw ConfigError(
        "runner import: name one timm model as timm/NAME (e.g. timm/efficientnet_b0)");
  nlohmann::json doc = {{"model", {{"backbone", names[0]}, {"kwargs", nlohmann::json::object()}}}};
  nlohmann::json& model = doc["model"];
  model["in_chans"] = cl.get<int64_t>("in-chans");
  model["num_classes"] = cl.get<int64_t>("num-classes");
  model["drop_path_rate"] = cl.get<double>("drop-path-rate");
  std::string pretrained = cl.get<std::string>("pretrained");
  if (pretrained != "false" && pretrained != "true" && pretrained.rfind("hf-hub:", 0) != 0)
    pretrained = fs::absolute(pretrained).lexically_normal().string();
  model["pretrained"] = pretrained;
  config::SourceMap marks;
  if (cl.has("set")) {
    for (const std::string& text : cl.get<std::vector<std::string>>("set")) {
      const config::Override o = config::parse_override(text);
      if (o.path.size() < 3 || o.path[0] != "model" || o.path[1] != "kwargs")
        throw ConfigError("runner import: --set " + text +
                          ": only model.kwargs.KEY=VALUE (the other arguments have flags)");
      config::apply_override(doc, o, marks, nullptr);
    }
  }
  const models::TimmRequest request = models::timm_request_from(model);
  std::string output;
  if (cl.has("output")) {
    output = fs::absolute(cl.get<std::string>("output")).lexically_normal().string();
    models::import_timm(request, output);
  } else {
    output = models::timm_cached_or_imported(request);
  }
  std::ifstream about(output + ".json");
  const nlohmann::json info = about ? nlohmann::json::parse(about, nullptr, false) : nullptr;
  std::cout << "wrote " << output << " (" << names[0];
  if (info.is_object()) {
    std::cout << ", timm " << info.value("timm_version", "?") << ", "
              << info.value("parameters", int64_t{0}) << " parameters";
    if (info.contains("pretrained_tag") && info["pretrained_tag"].is_string())
      std::cout << ", pretrained " << info["pretrained_tag"].get<std::string>();
  }
  std::cout << ")\nuse it with model.backbone: " << names[0]
            << (cl.has("output") ? " or model: {backbone: torchscript, path: " + output + "}"
                                 : std::string(" and the same arguments"))
            << "\n";
  return 0;
}

}  // namespace runner::cli
