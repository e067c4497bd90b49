# cmake --install: the API's headers, the libraries it links (static, with
# their dependencies exported), pc-opt and pc-run, and the pc CMake package.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PC_INSTALLED_LIBS PCApi PCData PCCpuExecutor PCActors PCCpuKernels
  PCPortableKernels PCCollectives
  PCWorld PCDevice PCSharding PCPipeline PCPlanner PCBoxing PCMeshes PCReference PCRegistration PCPasses PCDialect)
install(TARGETS ${PC_INSTALLED_LIBS} EXPORT pcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The CUDA backend's module, which programs load on first use from here.
if(PC_HAVE_CUDA)
  install(TARGETS pc-cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/pc)
endif()
install(TARGETS pc-opt pc-run pc-plan RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# pc-plan's cluster specs, which it finds by name next to its binary.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/planner/clusters/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/pc/clusters FILES_MATCHING PATTERN "*.json")
# The public headers and the few they include.
foreach(header api/Graph.h api/Program.h api/Files.h api/Trace.h dialect/Sharding.h
    runtime/device/HostTensor.h runtime/comm/Communicator.h
    runtime/comm/World.h)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()
install(EXPORT pcTargets NAMESPACE pc::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pc)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pcConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pc
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pcConfig.cmake
  ${PROJECT_BINARY_DIR}/pcConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pc)
