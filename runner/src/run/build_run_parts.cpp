#include "run/build_run_parts.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include "config/init_source.hpp"
#include "config/pretrained_source.hpp"
#include "config/source_map.hpp"
#include "models/pretrained.hpp"
#include "runner/error.hpp"
#include "runner/registries.hpp"
#include "train/checkpoint.hpp"
#include "train/device_options.hpp"

namespace runner::run {
namespace {

using nlohmann::json;

// A plugin's parameters: its section without the key that selects it.
json plugin_params(const json& section, const std::string& selector = "name") {
  json params = section;
  params.erase(selector);
  return params;
}

// A dataset plugin's error that starts with one of its parameters ("val_split asks for ...",
// or with its full path: "data.dataset.shard_index: ..."): that key's file:line and full path
// first, as every config error has them.
std::string located_dataset_error(const config::Experiment& e, const std::string& message) {
  const auto starts_with_key = [&](const std::string& key) {
    return message.rfind(key + " ", 0) == 0 || message.rfind(key + ":", 0) == 0;
  };
  for (const auto& [key, value] : e.doc.at("data").at("dataset").items()) {
    const std::string mark = e.marks.value_mark("/data/dataset/" + key).to_string();
    if (starts_with_key("data.dataset." + key)) return mark + ": " + message;
    if (starts_with_key(key)) return mark + ": data.dataset." + message;
  }
  return message;
}

data::DatasetSplits build_datasets(const config::Experiment& e) {
  const json& dataset = e.doc.at("data").at("dataset");
  const config::DataOptions& options = e.options.data;
  data::DatasetContext context;
  context.seed = e.options.seed;
  context.config_dir = e.dir;
  context.limit_train = options.limit_train;
  context.limit_val = options.limit_val;
  context.limit_test = options.limit_test;
  const auto& entry = registries().datasets.at(dataset.at("name").get<std::string>());
  data::DatasetSplits splits;
  try {
    splits = entry.factory(plugin_params(dataset), context);
  } catch (const ConfigError& error) {
    throw ConfigError(located_dataset_error(e, error.what()));
  } catch (const DataError& error) {  // a file the data names is not there: before any rank runs
    throw ConfigError(error.what());
  }
  if (context.limit_train) splits.train = data::limit_dataset(splits.train, *context.limit_train);
  if (context.limit_val) splits.val = data::limit_dataset(splits.val, *context.limit_val);
  if (context.limit_test) splits.test = data::limit_dataset(splits.test, *context.limit_test);
  return splits;
}

// The model section's backbone builds the model; the section is its parameters (a backbone
// plugin reads `backbone` too: timm/<name> names the model it imports).
std::shared_ptr<models::Model> build_model(const json& section) {
  const std::string backbone = section.at("backbone").get<std::string>();
  auto model = registries().models.at(backbone).factory(section);
  if (!model) throw Error("model plugin '" + backbone + "' built nothing");
  return model;
}

train::PartsDescription describe_parts(const json& doc) {
  train::PartsDescription about;
  const json& model = doc.at("model");
  about.dataset = doc.at("data").at("dataset").at("name").get<std::string>();
  about.backbone = model.at("backbone").get<std::string>();
  about.optimizer = doc.at("optimizer").at("name").get<std::string>();
  about.scheduler = doc.at("scheduler").at("name").get<std::string>();
  about.loss = doc.at("loss").at("name").get<std::string>();
  const json& pretrained = model.value("pretrained", json(false));
  if (pretrained.is_string()) about.pretrained = pretrained.get<std::string>();
  about.model_path = model.value("path", "");
  try {  // a folder without the checkpoint asked for: check_init_from says so at its line
    if (const auto source = config::init_source(model)) about.init_from = source->describe();
  } catch (const ConfigError&) {
  }
  if (model.contains("in_chans")) about.model_options = models::model_options_from(model);
  return about;
}

// A runner checkpoint is a zip archive (torch's serialisation); a safetensors file starts with
// its header's length.
bool is_zip_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, sizeof magic) && std::equal(magic, magic + 4, "PK\x03\x04");
}

// Weights `file` into `model` as timm's load_pretrained: a runner checkpoint (a zip archive:
// its model's weights, or its average with `ema`) or a .safetensors file.
models::PretrainedLoad load_weights_file(models::Model& model, const std::string& file, bool ema,
                                         const models::ModelOptions& options) {
  if (!is_zip_archive(file))
    return models::load_pretrained(model, file, options.in_chans, options.num_classes);
  const auto weights = ema ? train::CheckpointWeights::kEma : train::CheckpointWeights::kModel;
  return models::load_pretrained(model, train::read_checkpoint_tensors(file, weights), file,
                                 options.in_chans, options.num_classes);
}

}  // namespace

std::string plugin_error_located(const config::Experiment& e, const std::string& message,
                                 const std::string& section) {
  const size_t colon = message.find(": ");
  const std::string prefix = section.substr(1) + ".";
  if (message.rfind(prefix, 0) != 0 || colon == std::string::npos ||
      message.substr(0, colon).find(' ') != std::string::npos)
    return e.marks.value_mark(section).to_string() + ": " + message;
  const std::string key = message.substr(0, colon);
  return e.marks.value_mark(config::pointer_from_path(key)).to_string() + ": " + message;
}

models::FrozenPart freeze_part(const config::Experiment& e, models::Model& model) {
  const json& section = e.doc.at("model");
  if (section.value("freeze", json()).is_null()) return {};
  try {
    models::FrozenPart part = models::frozen_part(model, section.at("freeze"));
    models::set_frozen(part, true);
    return part;
  } catch (const ConfigError& error) {
    throw ConfigError(e.marks.value_mark("/model/freeze").to_string() +
                      ": model.freeze: " + error.what());
  }
}

namespace {

void load_initial_weights_of(const json& section, models::Model& model, bool announce) {
  const auto options = models::model_options_from(section);
  if (const auto source = config::init_source(section)) {
    const auto loaded = load_weights_file(model, source->file, source->ema, options);
    if (announce)
      spdlog::info("initial weights (model.init_from): {}{}",
                   loaded.describe(options.in_chans, options.num_classes),
                   source->ema ? " (the EMA average)" : "");
    return;
  }
  const json& pretrained = section.value("pretrained", json(false));
  if (!pretrained.is_string() ||
      config::is_scripted_backbone(section.at("backbone").get<std::string>()))
    return;
  const auto loaded = load_weights_file(model, pretrained.get<std::string>(), false, options);
  if (announce)
    spdlog::info("pretrained weights: {}", loaded.describe(options.in_chans, options.num_classes));
}

}  // namespace

void load_initial_weights(const config::Experiment& e, models::Model& model, bool announce) {
  const json& section = e.doc.at("model");
  try {
    load_initial_weights_of(section, model, announce);
  } catch (const DataError& error) {  // the file does not fit: the key that names it
    const std::string key =
        section.value("init_from", json()).is_string() ? "init_from" : "pretrained";
    throw ConfigError(e.marks.value_mark("/model/" + key).to_string() + ": model." + key + ": " +
                      error.what());
  }
}

train::RunParts build_run_parts(const config::Experiment& e, const PartsRequest& request) {
  const json& doc = e.doc;
  train::RunParts parts;
  parts.about = describe_parts(doc);
  if (request.data) parts.splits = build_datasets(e);
  parts.train_pipeline =
      data::build_pipeline(doc.at("data").at("train_transforms"), registries().transforms);
  parts.eval_pipeline =
      data::build_pipeline(doc.at("data").at("eval_transforms"), registries().transforms);
  // The factories hold copies of their sections: the parts outlive the document.
  const json model_section = doc.at("model");
  const json optimizer_section = doc.at("optimizer");
  const json scheduler_section = doc.at("scheduler");
  parts.make_model = [model_section] { return build_model(model_section); };
  parts.make_optimizer = [optimizer_section](torch::nn::Module& model) {
    const std::string name = optimizer_section.at("name").get<std::string>();
    auto optimizer =
        registries().optimizers.at(name).factory(plugin_params(optimizer_section), model);
    if (!optimizer) throw Error("optimizer plugin '" + name + "' built nothing");
    return optimizer;
  };
  if (request.model) {
    // The initial weights come from the experiment's seed, on every rank alike.
    torch::manual_seed(e.options.seed);
    parts.model = parts.make_model();
    // Every rank reads the file before DataParallel makes the ranks' parameters identical.
    if (request.pretrained) load_initial_weights(e, *parts.model, request.announce);
    parts.model->to(request.device);
    train::apply_memory_format(request.channels_last, *parts.model);
  }
  if (request.model && request.training) {
    try {
      parts.optimizer = parts.make_optimizer(*parts.model);
    } catch (const ConfigError& error) {
      throw ConfigError(plugin_error_located(e, error.what(), "/optimizer"));
    }
    parts.make_scheduler = [scheduler_section](const optim::ScheduleContext& context) {
      const auto& entry =
          registries().schedulers.at(scheduler_section.at("name").get<std::string>());
      return entry.factory(plugin_params(scheduler_section), context);
    };
  }
  // After the optimizer: its groups hold the frozen part too, which train.unfreeze_at_epoch
  // thaws; a parameter without a gradient gets no update and no state.
  if (request.model) parts.frozen = freeze_part(e, *parts.model);
  const json& loss = doc.at("loss");
  parts.loss =
      registries().losses.at(loss.at("name").get<std::string>()).factory(plugin_params(loss));
  for (const auto& item : doc.at("metrics"))
    parts.metrics.push_back(
        registries().metrics.at(item.at("name").get<std::string>()).factory(plugin_params(item)));
  return parts;
}

train::PartsDescription describe_run_parts(const config::Experiment& e) {
  return describe_parts(e.doc);
}

std::pair<int64_t, int64_t> count_parameters(const torch::nn::Module& model) {
  int64_t all = 0, trainable = 0;
  for (const auto& p : model.parameters()) {
    all += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  return {all, trainable};
}

}  // namespace runner::run
