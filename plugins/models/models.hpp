#pragma once
// Registration functions of the built-in backbones, one per family file.

#include "runner/registries.hpp"

namespace runner::models {

void register_convnext(Registry<ModelFactory>& registry);
void register_resnet(Registry<ModelFactory>& registry);
void register_small_cnn(Registry<ModelFactory>& registry);
void register_scripted(Registry<ModelFactory>& registry);

}  // namespace runner::models
