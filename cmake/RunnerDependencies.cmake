# Every third-party dependency, found once. Debian 12 package names are in the Makefile's `deps`.
find_package(Threads REQUIRED)
find_package(Torch REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Boost 1.71 REQUIRED COMPONENTS program_options)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(ZLIB REQUIRED)
find_path(VALIJSON_INCLUDE_DIR valijson/validator.hpp REQUIRED)

# yaml-cpp's Debian config names its target `yaml-cpp`; newer ones `yaml-cpp::yaml-cpp`.
if(TARGET yaml-cpp::yaml-cpp)
  set(RUNNER_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(RUNNER_YAML_TARGET yaml-cpp)
endif()

# c10d's Gloo headers include <gloo/...>; Debian ships them in libgloo-dev.
find_path(GLOO_INCLUDE_DIR gloo/config.h)
