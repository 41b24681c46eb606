#include <iostream>

#include "runner/registries.hpp"

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  runner::register_builtin_plugins(runner::registries());
  std::cout << "runner " << RUNNER_VERSION << "\n";
  return 0;
}
