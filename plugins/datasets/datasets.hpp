#pragma once
// One registration function per built-in dataset (called by register.cpp).

#include "runner/registries.hpp"

namespace runner::data {

void register_mnist(Registry<DatasetFactory>& registry);
void register_kaggle_csv(Registry<DatasetFactory>& registry);
void register_image_folder(Registry<DatasetFactory>& registry);
void register_image_csv(Registry<DatasetFactory>& registry);
void register_synthetic(Registry<DatasetFactory>& registry);
void register_webdataset(Registry<DatasetFactory>& registry);

}  // namespace runner::data
