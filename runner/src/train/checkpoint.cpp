#include "train/checkpoint.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dist/world.hpp"
#include "runner/error.hpp"
#include "util/atomic_file.hpp"

namespace runner::train {
namespace fs = std::filesystem;

namespace {

// Copies the archive's values INTO the module's existing tensors, mirroring Module::save's layout
// (parameters, buffers, then one sub-archive per child). Module::load would `set_` them instead,
// which detaches the gradient hooks a DataParallel reducer registered: a resumed multi-rank run
// then silently trained without averaging gradients.
void copy_module_from(torch::nn::Module& module, torch::serialize::InputArchive& archive,
                      const std::string& prefix) {
  auto copy = [&](const std::string& key, torch::Tensor& target, bool is_buffer) {
    torch::Tensor value;
    archive.read(key, value, is_buffer);
    if (value.sizes() != target.sizes()) {
      throw DataError("the checkpoint's '" + prefix + key + "' has shape " +
                      c10::str(value.sizes()) + " but the model's has " + c10::str(target.sizes()));
    }
    target.copy_(value);
  };
  for (auto& p : module.named_parameters(/*recurse=*/false)) copy(p.key(), p.value(), false);
  for (auto& b : module.named_buffers(/*recurse=*/false)) copy(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive child_archive;
    archive.read(child.key(), child_archive);
    copy_module_from(*child.value(), child_archive, prefix + child.key() + ".");
  }
}

// Module::save's layout with copies of the values: an archive keeps references to the tensors
// it is given until it is written, and the average is in the model only for this call.
void save_module_copy(const torch::nn::Module& module, torch::serialize::OutputArchive& archive) {
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    archive.write(p.key(), p.value().detach().clone(), /*is_buffer=*/false);
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    archive.write(b.key(), b.value().detach().clone(), /*is_buffer=*/true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::OutputArchive child_archive(archive.compilation_unit());
    save_module_copy(*child.value(), child_archive);
    archive.write(child.key(), child_archive);
  }
}

// Every tensor of a Module::save archive by its state_dict name (children's under "child.").
void collect_tensors(torch::serialize::InputArchive& archive, const std::string& prefix,
                     std::map<std::string, torch::Tensor>& out) {
  for (const std::string& key : archive.keys()) {
    torch::Tensor value;
    torch::serialize::InputArchive child;
    if (archive.try_read(key, value))
      out.emplace(prefix + key, value);
    else if (archive.try_read(key, child))
      collect_tensors(child, prefix + key + ".", out);
  }
}

}  // namespace

torch::Tensor cpu_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

void save_checkpoint(const std::string& path, torch::nn::Module& model, optim::Optimizer* optimizer,
                     const CheckpointContent& content, ModelEma* ema) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  if (ema != nullptr) {  // in the model's own layout: it loads into the model like "model"
    torch::serialize::OutputArchive ema_archive;
    {
      EmaWeightsInModel averaged(ema, model);
      save_module_copy(model, ema_archive);
    }
    archive.write("ema", ema_archive);
  }
  if (optimizer != nullptr) {
    torch::serialize::OutputArchive optimizer_archive;
    optimizer->state_to_host();
    optimizer->torch_optimizer().save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }
  archive.write("meta", c10::IValue(content.meta.dump()));
  if (content.rng_states.defined()) archive.write("rng_states", content.rng_states);

  // Beside the old file, then switch: a crash at any point leaves one complete checkpoint. The
  // bytes go through our own writes: torch's writer would throw from its destructor on a full
  // disk (the process aborts); ours remembers the failure and commit() reports it in one line,
  // the temporary file removed.
  util::AtomicFile file(path);
  archive.save_to([&file](const void* data, size_t size) {
    file.write(data, size);
    return size;
  });
  file.commit();
}

CheckpointWeights parse_checkpoint_weights(const std::string& text) {
  if (text == "model") return CheckpointWeights::kModel;
  if (text == "ema") return CheckpointWeights::kEma;
  throw ConfigError("weights '" + text + "': write model or ema");
}

std::map<std::string, torch::Tensor> read_checkpoint_tensors(const std::string& path,
                                                             CheckpointWeights weights) {
  const char* part = weights == CheckpointWeights::kEma ? "ema" : "model";
  torch::serialize::InputArchive archive, weights_archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    std::string what = e.what();
    throw DataError("cannot read '" + path + "' as a runner checkpoint (" +
                    what.substr(0, what.find('\n')) +
                    "): a PyTorch state_dict saved by torch.save converts to what runner reads "
                    "with safetensors.torch.save_file(state_dict, 'model.safetensors')");
  }
  if (!archive.try_read(part, weights_archive)) {
    c10::IValue meta;
    throw DataError("'" + path + "' " +
                    (!archive.try_read("meta", meta)
                         ? std::string("is not a runner checkpoint (a TorchScript file is "
                                       "model.backbone: torchscript with model.path)")
                         : "holds no averaged weights (its run had train.ema.enabled false)"));
  }
  std::map<std::string, torch::Tensor> tensors;
  collect_tensors(weights_archive, "", tensors);
  return tensors;
}

nlohmann::json read_checkpoint_meta(const std::string& path) {
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    c10::IValue meta;
    if (archive.try_read("meta", meta)) return nlohmann::json::parse(meta.toStringRef());
    return nlohmann::json::object();
  } catch (const std::exception& e) {
    throw DataError("cannot read checkpoint '" + path + "': " + e.what());
  }
}

CheckpointContent load_checkpoint(const std::string& path, torch::nn::Module& model,
                                  optim::Optimizer* optimizer, CheckpointWeights weights,
                                  ModelEma* ema) {
  if (!fs::exists(path)) throw DataError("checkpoint '" + path + "' does not exist");
  CheckpointContent content;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::serialize::InputArchive model_archive;
    if (ema != nullptr && weights == CheckpointWeights::kModel &&
        archive.try_read("ema", model_archive)) {
      // The average through the model, from the same archive; the model's weights then over it.
      torch::NoGradGuard no_grad;
      copy_module_from(model, model_archive, "");
      ema->exchange_with(model);
      content.ema_loaded = true;
    }
    if (weights == CheckpointWeights::kEma) {
      if (!archive.try_read("ema", model_archive))
        throw DataError(
            "it holds no averaged weights (its run had train.ema.enabled false): load the "
            "model's weights (--weights model)");
    } else {
      archive.read("model", model_archive);
    }
    torch::NoGradGuard no_grad;
    copy_module_from(model, model_archive, "");
    if (optimizer != nullptr) {
      torch::serialize::InputArchive optimizer_archive;
      if (archive.try_read("optimizer", optimizer_archive)) {
        optimizer->torch_optimizer().load(optimizer_archive);
        optimizer->state_from_host();
      }
    }
    c10::IValue meta;
    if (archive.try_read("meta", meta)) content.meta = nlohmann::json::parse(meta.toStringRef());
    torch::Tensor rng;
    if (archive.try_read("rng_states", rng)) content.rng_states = rng;
  } catch (const DataError& e) {
    throw DataError("cannot load checkpoint '" + path + "': " + e.what());
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    what = what.substr(0, what.find('\n'));
    throw DataError("cannot load checkpoint '" + path + "': " + what +
                    " (is it a runner checkpoint of this experiment's model?)");
  }
  return content;
}

void save_run_checkpoint(dist::World& world, const std::string& path, torch::nn::Module& model,
                         optim::Optimizer* optimizer, nlohmann::json meta, ModelEma* ema) {
  CheckpointContent content;
  content.meta = std::move(meta);
  content.rng_states = world.all_gather(cpu_rng_state().to(torch::kFloat)).to(torch::kUInt8);
  // Every rank learns whether it was written: all end with the same line when it was not.
  dist::on_main_process(world, [&] {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) throw Error(util::write_failure(fs::path(path).parent_path().string(), ec.value()));
    save_checkpoint(path, model, optimizer, content, ema);
  });
}

}  // namespace runner::train
