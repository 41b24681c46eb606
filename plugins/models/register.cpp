#include "builtins.hpp"

namespace runner {

void register_builtin_models(Registry<ModelFactory>& registry) { (void)registry; }

}  // namespace runner
