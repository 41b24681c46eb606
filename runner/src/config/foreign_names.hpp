#pragma once
// The names people bring from Lightning, Accelerate, Hydra configs and timm's train.py (what
// docs/coming-from.md maps), for an unknown key or plugin name: "train.max_epochs: unknown key;
// runner calls it train.epochs", "metrics: unknown metric 'f1'; runner calls it macro_f1".

#include <optional>
#include <string>

namespace runner::config {

/// The runner key for an unknown key's last name (`max_epochs`, `learning_rate`,
/// `gradient_clip_val`, ...), with a word on how it differs where it does; nullopt if none.
std::optional<std::string> runner_key_for(const std::string& foreign_key);

/// The runner plugin of `kind` (a registry: metrics, transforms, losses, ...) for a name another
/// framework gives it (`f1`, `hflip`, `CrossEntropyLoss`); nullopt if none.
std::optional<std::string> runner_plugin_for(const std::string& kind, const std::string& name);

}  // namespace runner::config
