# `cmake --install` puts the executable, the libraries, the public headers and a CMake package
# (find_package(runner) -> runner::core) under CMAKE_INSTALL_PREFIX, so plugins build out of tree.
include(CMakePackageConfigHelpers)

install(TARGETS runner runner_engine runner_core runner_builtins
        EXPORT runnerTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runner/include/runner DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas DESTINATION ${CMAKE_INSTALL_DATADIR}/runner)
install(EXPORT runnerTargets NAMESPACE runner:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/runner)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/runnerConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/runnerConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/runner)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/runnerConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/runnerConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/runnerConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/runner)
