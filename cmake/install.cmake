# `cmake --install build --prefix P`: P/lib/libonnxllm.so*, P/include/ort_genai_c.h and ort_genai.h,
# P/include/onnxllm/compat/onnxruntime_cxx_api.h (Ort::Env for the published examples' common.h),
# the CMake package (find_package(onnxllm) -> onnxllm::onnxllm), P/lib/pkgconfig/onnxllm.pc and
# the CLI P/bin/onnxllm.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS onnxllm_shared EXPORT onnxllmTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/src/api/include/compat/onnxruntime_cxx_api.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onnxllm/compat)
install(TARGETS onnxllm RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/onnxllm)

set(ONNXLLM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/onnxllm)
install(EXPORT onnxllmTargets NAMESPACE onnxllm:: DESTINATION ${ONNXLLM_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/onnxllmConfig.cmake.in
  ${CMAKE_BINARY_DIR}/onnxllmConfig.cmake INSTALL_DESTINATION ${ONNXLLM_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/onnxllmConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/onnxllmConfig.cmake ${CMAKE_BINARY_DIR}/onnxllmConfigVersion.cmake
  DESTINATION ${ONNXLLM_CMAKE_DIR})

# The .pc file locates the prefix from its own place, so the install prefix may be chosen at
# install time (cmake --install --prefix).
configure_file(${PROJECT_SOURCE_DIR}/cmake/onnxllm.pc.in ${CMAKE_BINARY_DIR}/onnxllm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/onnxllm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
