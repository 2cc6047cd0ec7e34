# `cmake --install BUILD --prefix PREFIX`: the programs, libcronledger.so,
# the public headers (include/cronledger/), a CMake package
# (find_package(cronledger) -> cronledger::cronledger) and a pkg-config file
# (pkg-config --cflags --libs cronledger). docs/embedding.md.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(cronledger_shared PROPERTIES EXPORT_NAME cronledger)
install(TARGETS cronledger cronledger-core RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS cronledger_shared EXPORT cronledgerTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cronledger
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/cronledger)
install(EXPORT cronledgerTargets NAMESPACE cronledger:: DESTINATION ${package_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cronledgerConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cronledgerConfig.cmake INSTALL_DESTINATION ${package_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cronledgerConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cronledgerConfig.cmake
  ${CMAKE_BINARY_DIR}/cronledgerConfigVersion.cmake DESTINATION ${package_dir})

configure_file(${PROJECT_SOURCE_DIR}/cmake/cronledger.pc.in ${CMAKE_BINARY_DIR}/cronledger.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cronledger.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
