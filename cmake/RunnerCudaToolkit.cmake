# The CUDA toolkit that the wheel's CUDA-enabled libtorch needs at configure time (its CMake
# config compiles a CUDA test program and reads the runtime's headers). Included by
# RunnerDependencies.cmake after RUNNER_TORCH_CUDA (torch.version.cuda, e.g. "13.0"; empty for a
# CPU-only torch) and RUNNER_TORCH_NVIDIA_DIR (the wheel's site-packages/nvidia) are known.
#
# Order: a toolkit the user names (-DCUDAToolkit_ROOT, $CUDAToolkit_ROOT, $CUDA_HOME) must match
# torch's CUDA major.minor or the configure stops; /usr/local/cuda or an nvcc on PATH is used when
# it matches and skipped with one warning when it does not; otherwise the toolkit is assembled in
# the build folder from the pinned PyPI wheels that `make deps` installs (requirements.txt:
# cuda-toolkit[nvcc,nvvm,crt,cccl]), so a machine without any CUDA install builds the same binary.
# Sets RUNNER_CUDA_TOOLKIT_ROOT, RUNNER_CUDA_TOOLKIT_VERSION and RUNNER_CUDA_TOOLKIT_SOURCE.

if(NOT RUNNER_TORCH_CUDA)
  return()  # CPU-only torch: its CMake config needs no toolkit.
endif()

# "13.0" from `nvcc --version` ("Cuda compilation tools, release 13.0, V13.0.88"); empty if none.
function(runner_nvcc_release nvcc out)
  set(release "")
  if(EXISTS "${nvcc}")
    execute_process(COMMAND "${nvcc}" --version OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE rc)
    if(rc EQUAL 0 AND text MATCHES "release ([0-9]+\\.[0-9]+)")
      set(release "${CMAKE_MATCH_1}")
    endif()
  endif()
  set(${out} "${release}" PARENT_SCOPE)
endfunction()

# A toolkit root the user asked for: it is used or the configure stops, never silently replaced.
set(explicit_root "")
foreach(candidate "${CUDAToolkit_ROOT}" "$ENV{CUDAToolkit_ROOT}" "$ENV{CUDA_HOME}")
  if(candidate AND NOT explicit_root)
    set(explicit_root "${candidate}")
  endif()
endforeach()

set(RUNNER_CUDA_TOOLKIT_ROOT "")
if(explicit_root)
  runner_nvcc_release("${explicit_root}/bin/nvcc" release)
  if(NOT release STREQUAL RUNNER_TORCH_CUDA)
    if(NOT release)
      set(release "none (no ${explicit_root}/bin/nvcc)")
    endif()
    message(FATAL_ERROR
      "CUDA toolkit ${release} at ${explicit_root} does not match torch ${RUNNER_TORCH_VERSION}'s "
      "CUDA ${RUNNER_TORCH_CUDA}: point CUDAToolkit_ROOT/CUDA_HOME at a ${RUNNER_TORCH_CUDA} "
      "toolkit, or unset them to build with the CUDA ${RUNNER_TORCH_CUDA} wheels `make deps` installs")
  endif()
  set(RUNNER_CUDA_TOOLKIT_ROOT "${explicit_root}")
  set(RUNNER_CUDA_TOOLKIT_SOURCE "CUDAToolkit_ROOT/CUDA_HOME")
else()
  find_program(RUNNER_PATH_NVCC nvcc NO_CACHE)
  foreach(nvcc /usr/local/cuda/bin/nvcc "${RUNNER_PATH_NVCC}")
    if(NOT RUNNER_CUDA_TOOLKIT_ROOT AND nvcc AND EXISTS "${nvcc}")
      runner_nvcc_release("${nvcc}" release)
      get_filename_component(bin "${nvcc}" DIRECTORY)
      get_filename_component(root "${bin}" DIRECTORY)
      if(NOT release)
        # An nvcc that does not answer (a dangling link, another machine's file) is no toolkit.
      elseif(release STREQUAL RUNNER_TORCH_CUDA)
        set(RUNNER_CUDA_TOOLKIT_ROOT "${root}")
        set(RUNNER_CUDA_TOOLKIT_SOURCE "system")
      else()
        message(WARNING
          "CUDA toolkit ${release} at ${root} does not match torch ${RUNNER_TORCH_VERSION}'s CUDA "
          "${RUNNER_TORCH_CUDA}: building with the CUDA ${RUNNER_TORCH_CUDA} wheels instead "
          "(-DCUDAToolkit_ROOT=<a ${RUNNER_TORCH_CUDA} toolkit> to use another)")
      endif()
    endif()
  endforeach()
endif()

if(NOT RUNNER_CUDA_TOOLKIT_ROOT)
  # The wheels' files, laid out as a toolkit root: bin/ (nvcc), nvvm/, include/ and lib64/ with
  # the unversioned libcudart.so that CMake's FindCUDA looks for. Links only: nothing is copied.
  string(REGEX REPLACE "\\..*" "" cuda_major "${RUNNER_TORCH_CUDA}")
  set(wheel_root "${RUNNER_TORCH_NVIDIA_DIR}/cu${cuda_major}")
  runner_nvcc_release("${wheel_root}/bin/nvcc" release)
  if(NOT release STREQUAL RUNNER_TORCH_CUDA)
    if(NOT release)
      set(release "none")
    endif()
    message(FATAL_ERROR
      "no CUDA ${RUNNER_TORCH_CUDA} toolkit for torch ${RUNNER_TORCH_VERSION} (found: ${release} "
      "in ${wheel_root}/bin): run `make deps` (installs requirements.txt's "
      "cuda-toolkit[nvcc,nvvm,crt,cccl] into .venv), or pass -DCUDAToolkit_ROOT=<a "
      "${RUNNER_TORCH_CUDA} toolkit>")
  endif()
  # bin/ and lib64/ are real folders of links: nvcc finds its libraries at bin/../lib64, and a
  # linked bin/ would make that path lead back into the wheel.
  set(root "${CMAKE_BINARY_DIR}/cuda-toolkit")
  file(REMOVE_RECURSE "${root}")
  file(MAKE_DIRECTORY "${root}/bin" "${root}/lib64")
  foreach(part nvvm include)
    file(CREATE_LINK "${wheel_root}/${part}" "${root}/${part}" SYMBOLIC)
  endforeach()
  file(GLOB files "${wheel_root}/bin/*")
  foreach(file ${files})
    get_filename_component(name "${file}" NAME)
    file(CREATE_LINK "${file}" "${root}/bin/${name}" SYMBOLIC)
  endforeach()
  file(GLOB files "${wheel_root}/lib/*.so*" "${wheel_root}/lib/*.a")
  foreach(file ${files})
    get_filename_component(name "${file}" NAME)
    file(CREATE_LINK "${file}" "${root}/lib64/${name}" SYMBOLIC)
    # libcudart.so.13 -> also libcudart.so, the name the linker and FindCUDA look for.
    if(name MATCHES "^(lib[^.]+\\.so)\\.[0-9]+$")
      file(CREATE_LINK "${file}" "${root}/lib64/${CMAKE_MATCH_1}" SYMBOLIC)
    endif()
  endforeach()
  set(RUNNER_CUDA_TOOLKIT_ROOT "${root}")
  set(RUNNER_CUDA_TOOLKIT_SOURCE "the pip wheels in ${wheel_root}")
endif()

set(RUNNER_CUDA_TOOLKIT_VERSION "${RUNNER_TORCH_CUDA}")
set(CUDAToolkit_ROOT "${RUNNER_CUDA_TOOLKIT_ROOT}")
set(CUDA_TOOLKIT_ROOT_DIR "${RUNNER_CUDA_TOOLKIT_ROOT}" CACHE PATH "CUDA toolkit root" FORCE)
set(CMAKE_CUDA_COMPILER "${RUNNER_CUDA_TOOLKIT_ROOT}/bin/nvcc")
message(STATUS "CUDA ${RUNNER_TORCH_CUDA} toolkit for torch ${RUNNER_TORCH_VERSION}: "
               "${RUNNER_CUDA_TOOLKIT_ROOT} (${RUNNER_CUDA_TOOLKIT_SOURCE})")
