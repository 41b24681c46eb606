#include "builtins.hpp"
#include "datasets/datasets.hpp"

namespace runner {

void register_builtin_datasets(Registry<DatasetFactory>& registry) {
  data::register_mnist(registry);
  data::register_kaggle_csv(registry);
  data::register_image_folder(registry);
  data::register_image_csv(registry);
  data::register_synthetic(registry);
  data::register_webdataset(registry);
}

}  // namespace runner
