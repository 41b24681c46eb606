# OpenCV core/imgproc/imgcodecs from the unpacked Debian packages (RUNNER_DEPS_ROOT, set by
# bench/gpu_check.sh). Debian's own config (libopencv-dev) names every OpenCV module, and most of
# them do not travel to the GPU machine.
set(_runner_cv "${RUNNER_DEPS_ROOT}/usr")
set(OpenCV_INCLUDE_DIRS "${_runner_cv}/include/opencv4")
foreach(_module core imgproc imgcodecs)
  if(NOT TARGET opencv_${_module})
    add_library(opencv_${_module} SHARED IMPORTED)
    set_target_properties(opencv_${_module} PROPERTIES
      IMPORTED_LOCATION "${_runner_cv}/lib/x86_64-linux-gnu/libopencv_${_module}.so.406"
      INTERFACE_INCLUDE_DIRECTORIES "${OpenCV_INCLUDE_DIRS}")
  endif()
endforeach()
set(OpenCV_LIBS opencv_core opencv_imgproc opencv_imgcodecs)
set(OpenCV_VERSION 4.6.0)
set(OpenCV_FOUND TRUE)
