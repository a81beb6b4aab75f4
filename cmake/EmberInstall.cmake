# Installs libember, the compile stage (libember_graph), the checkpoint library, their headers
# and a CMake package so that find_package(ember) works: targets ember::ember, ember::graph and
# ember::ckpt. Generated kernels compile at run time against the installed kernels/*.h
# (graph/codegen_cpp.cpp finds them next to the installed library).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# An installed library finds the others beside it (libember_graph.so needs libember.so) without
# LD_LIBRARY_PATH; the tools' own path to lib/ is set in tools/CMakeLists.txt.
set_target_properties(ember ember_graph ember_ckpt PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS ember ember_graph ember_ckpt EXPORT emberTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime ${PROJECT_SOURCE_DIR}/kernels ${PROJECT_SOURCE_DIR}/graph
  ${PROJECT_SOURCE_DIR}/ckpt
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember
  FILES_MATCHING PATTERN "*.h")
install(EXPORT emberTargets NAMESPACE ember:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/emberConfig.cmake.in
  ${PROJECT_BINARY_DIR}/emberConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/emberConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/emberConfig.cmake ${PROJECT_BINARY_DIR}/emberConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
