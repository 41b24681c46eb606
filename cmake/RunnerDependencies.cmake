# Every third-party dependency, found once. Debian 12 package names are in the Makefile's `deps`;
# libtorch is the PyTorch wheel's (requirements.txt), in the project's .venv (`make deps`).
find_package(Threads REQUIRED)

set(RUNNER_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python"
    CACHE FILEPATH "The Python whose torch package provides libtorch (headers, libraries, CMake config)")
# One Python call: torch's CMake prefix, its version, the CUDA it was built with ("" for a CPU
# wheel) and the folder of its nvidia-* wheels (RunnerCudaToolkit.cmake assembles a toolkit there).
execute_process(
  COMMAND ${RUNNER_PYTHON} -c
          "import os, torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or ''); print(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), 'nvidia'))"
  OUTPUT_VARIABLE RUNNER_TORCH_FACTS OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE RUNNER_TORCH_FOUND ERROR_QUIET)
if(RUNNER_TORCH_FOUND EQUAL 0)
  string(REPLACE "\n" ";" RUNNER_TORCH_FACTS "${RUNNER_TORCH_FACTS}")
  list(GET RUNNER_TORCH_FACTS 0 RUNNER_TORCH_PREFIX)
  list(GET RUNNER_TORCH_FACTS 1 RUNNER_TORCH_VERSION)
  list(GET RUNNER_TORCH_FACTS 2 RUNNER_TORCH_CUDA)
  list(GET RUNNER_TORCH_FACTS 3 RUNNER_TORCH_NVIDIA_DIR)
  if(NOT Torch_DIR)
    list(APPEND CMAKE_PREFIX_PATH ${RUNNER_TORCH_PREFIX})
  endif()
  include(RunnerCudaToolkit)
elseif(NOT Torch_DIR)
  message(FATAL_ERROR "no torch package in ${RUNNER_PYTHON}: run `make deps` (creates .venv from "
                      "requirements.txt), or pass -DRUNNER_PYTHON=/path/to/python")
endif()
# A -DTorch_DIR without a Python torch (an unpacked libtorch): its CMake config finds its own
# CUDA toolkit, as it did before RunnerCudaToolkit.cmake.
find_package(Torch REQUIRED)
# The wheel's torch/lib (inside the project when it is .venv, so CMake's link-path RPATH skips
# it): installed binaries name it, to run against the libtorch they were built with.
get_filename_component(RUNNER_TORCH_LIB_DIR "${TORCH_LIBRARY}" DIRECTORY)
# And the CUDA runtime runner_core links itself (libcudart.so.N), from the folder the wheel's
# libtorch_cuda loads it (site-packages/nvidia/cuNN/lib): an installed runner then starts on a
# machine without a CUDA toolkit, and a process holds one copy of it. Without a wheel's: the
# folder of the toolkit runner was linked against.
set(RUNNER_INSTALL_RPATH "${RUNNER_TORCH_LIB_DIR}")
if(TORCH_CUDA_LIBRARIES)
  file(GLOB runner_cudart_found "${RUNNER_TORCH_LIB_DIR}/../../nvidia/*/lib/libcudart.so.*")
  if(NOT runner_cudart_found AND TARGET CUDA::cudart)
    get_target_property(runner_cudart_found CUDA::cudart IMPORTED_LOCATION)
  endif()
  foreach(file ${runner_cudart_found})
    get_filename_component(dir "${file}" DIRECTORY)
    file(REAL_PATH "${dir}" dir)
    list(APPEND RUNNER_INSTALL_RPATH "${dir}")
  endforeach()
  list(REMOVE_DUPLICATES RUNNER_INSTALL_RPATH)
endif()
message(STATUS "installed binaries find libtorch (and the CUDA runtime) in: ${RUNNER_INSTALL_RPATH}")
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Boost 1.71 REQUIRED COMPONENTS program_options)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(ZLIB REQUIRED)
# The webdataset dataset's tar shards (Debian's libarchive-dev).
find_package(LibArchive REQUIRED)
# The MLflow tracker's HTTP client (Debian's libcurl4-openssl-dev).
find_package(CURL REQUIRED)
find_path(VALIJSON_INCLUDE_DIR valijson/validator.hpp REQUIRED)
# The image_csv dataset's CSV parser (Debian's header-only libfccp-dev).
find_path(FCCP_INCLUDE_DIR libfccp/csv.h REQUIRED)
# report.html and compare.html draw their charts with Chart.js (Debian's libjs-chart.js, MIT),
# compiled into the binary so that a page is one file that opens offline.
find_file(RUNNER_CHART_JS chart.min.js PATHS /usr/share/javascript/chart.js NO_DEFAULT_PATH)
if(NOT RUNNER_CHART_JS)
  message(FATAL_ERROR "Chart.js not found (/usr/share/javascript/chart.js/chart.min.js): run "
                      "`make deps` or `apt-get install libjs-chart.js`, or give "
                      "-DRUNNER_CHART_JS=/path/to/chart.min.js (Chart.js 3)")
endif()

# yaml-cpp's Debian config names its target `yaml-cpp`; newer ones `yaml-cpp::yaml-cpp`.
if(TARGET yaml-cpp::yaml-cpp)
  set(RUNNER_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(RUNNER_YAML_TARGET yaml-cpp)
endif()

# c10d's Gloo headers include <gloo/...>; Debian ships them in libgloo-dev.
find_path(GLOO_INCLUDE_DIR gloo/config.h)

# PyTorch bundles fmt 12 in torch/include, searched (-isystem) before /usr/include; Debian's
# spdlog 1.10 and its compiled library need Debian's fmt 9. An -I dir holding fmt 9 comes first;
# fmt/base.h (new in fmt 11, included by c10) maps onto fmt 9's core.h.
find_path(RUNNER_FMT9_INCLUDE fmt/core.h PATHS /usr/include NO_DEFAULT_PATH)
set(RUNNER_FMT_FIRST_DIR ${CMAKE_BINARY_DIR}/fmt-first)
if(RUNNER_FMT9_INCLUDE AND NOT EXISTS ${RUNNER_FMT_FIRST_DIR}/fmt/base.h)
  file(COPY ${RUNNER_FMT9_INCLUDE}/fmt DESTINATION ${RUNNER_FMT_FIRST_DIR})
  file(WRITE ${RUNNER_FMT_FIRST_DIR}/fmt/base.h "#pragma once\n#include <fmt/core.h>\n")
endif()
include_directories(BEFORE ${RUNNER_FMT_FIRST_DIR})
