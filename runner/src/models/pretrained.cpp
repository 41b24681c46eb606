#include "models/pretrained.hpp"

#include <cmath>
#include <filesystem>
#include <set>

#include "io/safetensors.hpp"
#include "runner/error.hpp"
#include "util/some_of.hpp"

namespace runner::models {
namespace {

std::string shape_string(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "," : "") + std::to_string(t.size(i));
  return s + "]";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string list_keys(const std::vector<std::string>& keys) { return util::some_of(keys, 8); }

std::string resolve_weights_path(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::string file = (std::filesystem::path(path) / "model.safetensors").string();
    if (!std::filesystem::is_regular_file(file, ec))
      throw DataError("pretrained weights folder '" + path +
                      "' holds no model.safetensors: point `pretrained` at the .safetensors file");
    return file;
  }
  if (!std::filesystem::exists(path, ec))
    throw DataError("pretrained weights '" + path + "' do not exist (expected a .safetensors " +
                    "file or a folder holding model.safetensors)");
  return path;
}

// Copies `source` into the module's tensors by name. Keys in `skip` are left as they are.
// Any missing, unexpected or mis-shaped key aborts before anything is copied.
int64_t copy_matching(torch::nn::Module& module, const std::map<std::string, torch::Tensor>& source,
                      const std::set<std::string>& skip, const std::string& file) {
  std::vector<std::string> missing, unexpected, misshaped;
  NamedTensors target = state_dict(module);
  std::set<std::string> target_names;
  for (const auto& [name, t] : target) {
    target_names.insert(name);
    if (skip.count(name)) continue;
    auto it = source.find(name);
    if (it == source.end()) {
      if (!ends_with(name, "num_batches_tracked")) missing.push_back(name);
    } else if (!it->second.sizes().equals(t.sizes())) {
      misshaped.push_back(name + " (file " + shape_string(it->second) + ", model " +
                          shape_string(t) + ")");
    }
  }
  for (const auto& kv : source)
    if (!target_names.count(kv.first) && !skip.count(kv.first)) unexpected.push_back(kv.first);
  if (!missing.empty() || !unexpected.empty() || !misshaped.empty()) {
    std::string msg = "weights '" + file + "' do not fit the model:";
    if (!missing.empty()) msg += " missing keys: " + list_keys(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected keys: " + list_keys(unexpected) + ";";
    if (!misshaped.empty()) msg += " mis-shaped keys: " + list_keys(misshaped) + ";";
    throw DataError(msg + " check that the backbone name matches the checkpoint");
  }
  torch::NoGradGuard no_grad;
  int64_t copied = 0;
  for (auto& [name, t] : target) {
    auto it = source.find(name);
    if (skip.count(name) || it == source.end()) continue;
    t.copy_(it->second);
    ++copied;
  }
  return copied;
}

}  // namespace

NamedTensors state_dict(const torch::nn::Module& module) {
  NamedTensors out;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const std::string prefix = item.key().empty() ? "" : item.key() + ".";
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false))
      out.emplace_back(prefix + p.key(), p.value());
    for (const auto& b : item.value()->named_buffers(/*recurse=*/false))
      out.emplace_back(prefix + b.key(), b.value());
  }
  return out;
}

torch::Tensor adapt_input_conv(int64_t in_chans, const torch::Tensor& w) {
  const auto type = w.scalar_type();
  torch::Tensor f = w.to(torch::kFloat);
  const int64_t in = f.size(1);
  if (in_chans == 1) {
    // Space-to-depth stems have 3*k input channels: sum each RGB triple.
    f = in > 3 ? f.reshape({f.size(0), in / 3, 3, f.size(2), f.size(3)}).sum(2)
               : f.sum(1, /*keepdim=*/true);
  } else if (in_chans != 3) {
    const int64_t repeat = (in_chans + 2) / 3;
    f = f.repeat({1, repeat, 1, 1}).slice(1, 0, in_chans) * (3.0 / static_cast<double>(in_chans));
  }
  return f.to(type);
}

std::string PretrainedLoad::describe(int64_t in_chans, int64_t num_classes) const {
  std::string line = "loaded " + std::to_string(tensors_loaded) + " tensors from " + file;
  line += first_conv_from ? "; first conv adapted from " + std::to_string(first_conv_from) +
                                " to " + std::to_string(in_chans) + " channel(s)"
                          : "; first conv used as it is";
  if (classifier_from)
    line += "; classifier left at its fresh init (" + std::to_string(classifier_from) + " -> " +
            std::to_string(num_classes) + " classes)";
  return line;
}

PretrainedLoad load_pretrained(Model& model, const std::string& path, int64_t in_chans,
                               int64_t num_classes) {
  const std::string file = resolve_weights_path(path);
  io::TensorFile checkpoint = io::read_safetensors(file);
  return load_pretrained(model, {checkpoint.tensors.begin(), checkpoint.tensors.end()}, file,
                         in_chans, num_classes);
}

PretrainedLoad load_pretrained(Model& model, std::map<std::string, torch::Tensor> source,
                               const std::string& file, int64_t in_chans, int64_t num_classes) {
  PretrainedLoad report;
  report.file = file;
  if (!source.count("head.norm.weight") && source.count("norm.weight") &&
      model.first_conv() == "stem.0")
    throw DataError("weights '" + file + "' are an original (non-timm) ConvNeXt checkpoint: " +
                    "convert it with timm first (timm.create_model(..., pretrained=True) and " +
                    "save_file(model.state_dict()))");

  const std::string conv_key = model.first_conv() + ".weight";
  auto conv = source.find(conv_key);
  if (conv != source.end() && conv->second.dim() == 4 && conv->second.size(1) != in_chans) {
    const int64_t have = conv->second.size(1);
    if (!(have == 3 || (in_chans == 1 && have % 3 == 0)))
      throw DataError("weights '" + file + "': first conv '" + conv_key + "' takes " +
                      std::to_string(have) + " channels and cannot be adapted to in_chans " +
                      std::to_string(in_chans) + " (only 3-channel kernels can)");
    conv->second = adapt_input_conv(in_chans, conv->second);
    report.first_conv_from = have;
  }

  std::set<std::string> skip;
  const std::string fc_weight = model.classifier() + ".weight";
  auto fc = source.find(fc_weight);
  if (fc != source.end() && fc->second.dim() >= 1 && fc->second.size(0) != num_classes) {
    // timm drops a classifier of another size and keeps the model's fresh one.
    report.classifier_from = fc->second.size(0);
    for (const std::string& key : {fc_weight, model.classifier() + ".bias"}) {
      source.erase(key);
      skip.insert(key);
    }
  }
  report.tensors_loaded = copy_matching(model, source, skip, file);
  return report;
}

void save_model_safetensors(const torch::nn::Module& module, const std::string& path,
                            const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");  // what timm/Hugging Face loaders expect in __metadata__
  io::write_safetensors(path, state_dict(module), meta);
}

void load_state_dict_safetensors(torch::nn::Module& module, const std::string& path) {
  io::TensorFile file = io::read_safetensors(path);
  std::map<std::string, torch::Tensor> source(file.tensors.begin(), file.tensors.end());
  copy_matching(module, source, {}, path);
}

}  // namespace runner::models
