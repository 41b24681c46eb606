#include "runner/registries.hpp"

namespace runner {

Registries& registries() {
  static Registries instance;
  return instance;
}

}  // namespace runner
