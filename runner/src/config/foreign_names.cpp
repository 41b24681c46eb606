#include "config/foreign_names.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace runner::config {
namespace {

// Lower case without '_', '-' and spaces: "Gradient-Clip_Val" and "gradientclipval" meet.
std::string folded(const std::string& name) {
  std::string out;
  for (const char c : name)
    if (c != '_' && c != '-' && c != ' ')
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<std::string> runner_key_for(const std::string& foreign_key) {
  // Only names runner has nowhere: one it has in another section (train.lr, optimizer.epochs)
  // is suggested where it lives by the schema itself.
  static const std::map<std::string, std::string> keys = {
      // Lightning's Trainer and callbacks
      {"maxepochs", "train.epochs"},
      {"minepochs", "train.epochs (runner has no minimum: train.early_stopping.patience)"},
      {"accumulategradbatches", "train.grad_accum_steps"},
      {"gradientclipval", "train.clip_grad_norm (a norm clip, as Lightning's default)"},
      {"devices", "launch.num_processes"},
      {"numnodes", "launch.nnodes"},
      {"strategy", "launch.backend (ranks are always DDP)"},
      {"logeverynsteps", "train.log_every_steps"},
      {"monitor", "train.best.metric"},
      {"savetopk", "train.checkpoints (best, last, best_and_last, none)"},
      // Accelerate
      {"mixedprecision", "precision"},
      {"numprocesses", "launch.num_processes"},
      {"gradientaccumulationsteps", "train.grad_accum_steps"},
      {"bs", "train.batch_size (per process)"},
      // Hydra and plain configs
      {"learningrate", "optimizer.lr"},
      {"numepochs", "train.epochs"},
      {"gpus", "launch.num_processes"},
      {"numgpus", "launch.num_processes"},
      {"nprocpernode", "launch.num_processes"},
      {"workers", "data.num_workers"},
      // timm's train.py
      {"opt", "optimizer.name"},
      {"sched", "scheduler.name"},
      {"warmupepochs", "scheduler.warmup_steps (in optimizer steps)"},
      {"warmuplr", "scheduler.warmup_steps (the warm-up starts from 0)"},
      {"minlr", "scheduler.min_lr"},
      {"clipgrad", "train.clip_grad_norm"},
      {"smoothing", "loss.label_smoothing (train.mixup.label_smoothing with mixup)"},
      {"droppath", "model.drop_path_rate"},
      {"modelema", "train.ema.enabled"},
      {"modelemadecay", "train.ema.decay"},
      {"amp", "precision (fp16 or bf16)"},
      {"ampdtype", "precision (fp16 or bf16)"},
      {"mixup", "train.mixup.mixup_alpha"},
      {"cutmix", "train.mixup.cutmix_alpha"},
      {"aa", "a rand_augment transform in data.train_transforms (config: rand-m9-mstd0.5-inc1)"},
      {"reprob", "a random_erasing transform after normalize (p)"},
      {"imgsize", "model.kwargs.img_size (timm/ models) or a resize transform"},
  };
  const auto it = keys.find(folded(foreign_key));
  if (it == keys.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> runner_plugin_for(const std::string& kind, const std::string& name) {
  static const std::map<std::string, std::map<std::string, std::string>> plugins = {
      {"metrics",
       {{"f1", "macro_f1"},
        {"f1score", "macro_f1"},
        {"macrof1", "macro_f1"},
        {"acc", "accuracy"},
        {"top1", "accuracy"},
        {"top5", "top_k (k: 5)"},
        {"topk", "top_k"},
        {"crossentropy", "loss"}}},
      {"transforms",
       {{"hflip", "horizontal_flip"},
        {"randomhorizontalflip", "horizontal_flip"},
        {"horizontalflip", "horizontal_flip"},
        {"vflip", "vertical_flip"},
        {"randomverticalflip", "vertical_flip"},
        {"verticalflip", "vertical_flip"},
        {"randomresizedcrop", "random_resized_crop"},
        {"randaugment", "rand_augment"},
        {"randomerasing", "random_erasing"},
        {"randombrightnesscontrast", "random_brightness_contrast"},
        {"colorjitter", "random_brightness_contrast"},
        {"shiftscalerotate", "shift_scale_rotate"},
        {"randomrotate90", "random_rotate90"},
        {"totensor", "to_tensor"},
        {"totensorv2", "to_tensor"}}},
      {"losses",
       {{"crossentropyloss", "cross_entropy"},
        {"ce", "cross_entropy"},
        {"softtargetcrossentropy", "cross_entropy (it takes mixup's soft targets)"},
        {"labelsmoothingcrossentropy", "cross_entropy (label_smoothing)"}}},
      {"optimizers", {{"adamw", "adamw"}, {"adam", "adam"}, {"sgd", "sgd"}, {"momentum", "sgd"}}},
      {"schedulers",
       {{"cosineannealinglr", "cosine"},
        {"cosineannealing", "cosine"},
        {"onecyclelr", "onecycle"},
        {"steplr", "step"},
        {"constant", "none"},
        {"constantlr", "none"}}},
  };
  const auto kind_it = plugins.find(kind);
  if (kind_it == plugins.end()) return std::nullopt;
  const auto it = kind_it->second.find(folded(name));
  if (it == kind_it->second.end() || it->second == name) return std::nullopt;
  return it->second;
}

}  // namespace runner::config
