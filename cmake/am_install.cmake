include(CMakePackageConfigHelpers)

install(DIRECTORY include/am DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS am am_lib EXPORT amTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET am_aml)  # the AML API (compat/aml), built with MPI
  install(FILES compat/aml/include/aml.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/am/aml)
  install(TARGETS am_aml EXPORT amTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS amrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT amTargets NAMESPACE am:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/am)

configure_package_config_file(cmake/amConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/amConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/am)
# CHANGELOG.md, "Versions": before 1.0 a minor release may break the API, so find_package(am
# 0.1) accepts 0.1.x only; from 1.0 on, any later release of the same major version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_am_compatibility SameMinorVersion)
else()
  set(_am_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/amConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_am_compatibility})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/amConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/amConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/am)

# With MPI, consumers of the static library also link MPI and see <mpi.h> (am/mpi.hpp).
set(AM_PC_CFLAGS "${AM_STACK_CLASH_FLAG}")
set(AM_PC_LIBS "")
if(AM_HAVE_MPI)
  string(APPEND AM_PC_CFLAGS " -DAM_HAVE_MPI=1 -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1")
  foreach(_dir IN LISTS MPI_C_INCLUDE_DIRS)
    string(APPEND AM_PC_CFLAGS " -I${_dir}")
  endforeach()
  foreach(_lib IN LISTS MPI_C_LIBRARIES)
    string(APPEND AM_PC_LIBS " ${_lib}")
  endforeach()
endif()
if(AM_HAVE_UCX)  # the ucx transport (a static libam_core)
  foreach(_lib IN LISTS UCX_LIBRARIES)
    string(APPEND AM_PC_LIBS " -l${_lib}")
  endforeach()
endif()
configure_file(cmake/am.pc.in ${CMAKE_CURRENT_BINARY_DIR}/am.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/am.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
