#include <gtest/gtest.h>

#include "runner/registries.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  runner::register_builtin_plugins(runner::registries());
  return RUN_ALL_TESTS();
}
