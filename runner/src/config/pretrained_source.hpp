#pragma once
// Where `model.pretrained` finds its weights: a file, a folder, `true` (timm's default tag for
// the backbone) or `hf-hub:timm/<name>.<tag>`, the last two read offline from the Hugging Face
// hub cache that timm.create_model(..., pretrained=True) and `hf download` leave behind.
// Torch-free: resolved before any rank starts, so missing weights are a config error.

#include <string>

#include "config/experiment.hpp"

namespace runner::config {

/// Whether `backbone` is a TorchScript one (timm/<name>, torchscript), whose weights come with
/// the module (model.pretrained is applied at import, not loaded by runner).
inline bool is_scripted_backbone(const std::string& backbone) {
  return backbone.rfind("timm/", 0) == 0 || backbone == "torchscript";
}

/// The Hugging Face hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else
/// ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

/// timm's default pretrained tag for a backbone (the first of its default_cfgs), or "" when
/// runner does not know one.
std::string timm_default_tag(const std::string& backbone);

/// The safetensors file `hf-hub:<repo>` names in the cache (repo like "timm/resnet18.a1_in1k"):
/// models--<org>--<name>/refs/main -> snapshots/<revision>/model.safetensors. Throws
/// ConfigError naming the path it looked for and the command that fills the cache.
std::string hf_hub_cached_file(const std::string& repo);

/// Replaces e.doc["model"]["pretrained"] by the weights file it names (absolute path), or
/// leaves false. Relative paths resolve against the experiment's folder. Throws ConfigError
/// with the key's file:line when the weights are not there.
void resolve_pretrained(Experiment& e);

}  // namespace runner::config
