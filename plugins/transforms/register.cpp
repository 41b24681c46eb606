#include "builtins.hpp"

namespace runner {

void register_builtin_transforms(Registry<TransformFactory>& registry) { (void)registry; }

}  // namespace runner
