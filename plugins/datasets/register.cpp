#include "builtins.hpp"

namespace runner {

void register_builtin_datasets(Registry<DatasetFactory>& registry) { (void)registry; }

}  // namespace runner
