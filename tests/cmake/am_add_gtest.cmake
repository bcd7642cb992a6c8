# am_add_gtest(<target> LAYER <layer> SOURCES <file>...
#              [TIMEOUT <s>] [TIMEOUT_LARGE <s>] [MPI_TIMEOUT <s>] [LABELS <label>...]
#              [ENVIRONMENT <VAR=value>...])
# (AM_TEST_ENVIRONMENT, when set by the caller, is added to every test's environment; with MPI,
# AM_MPIEXEC, AM_MPIEXEC_NUMPROC_FLAG, AM_MPIEXEC_FLAGS and AM_MPI_TEST_ENVIRONMENT say how the
# mpi tests are started.)
# Builds a GoogleTest binary and registers each of its tests as a CTest test named
# am.<layer>.<fixture>_<test>.<transport>.np<N>, except that the mpi tests of one variant share
# one MPI job, am.<layer>.<binary>.<transport>.np<N> (discovered after every build, see
# am_discover.cmake; a shared job's timeout is MPI_TIMEOUT plus a quarter of TIMEOUT per test).
# Every test gets a TIMEOUT (mpi ones MPI_TIMEOUT, default the larger of TIMEOUT and 60), the
# labels given plus its transport, and shm and mpi tests require the fixture that checks
# /dev/shm is clean at the end.
set(AM_TESTS_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(am_add_gtest target)
  cmake_parse_arguments(arg "" "LAYER;TIMEOUT;TIMEOUT_LARGE;MPI_TIMEOUT"
                        "SOURCES;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 60)
  endif()
  if(NOT arg_TIMEOUT_LARGE)
    set(arg_TIMEOUT_LARGE ${arg_TIMEOUT})
  endif()
  if(NOT arg_MPI_TIMEOUT)  # MPI start-up, and 4 processes on few cores
    set(arg_MPI_TIMEOUT ${arg_TIMEOUT})
    if(arg_MPI_TIMEOUT LESS 60)
      set(arg_MPI_TIMEOUT 60)
    endif()
  endif()
  if(AM_SANITIZE)  # instrumented code runs several times slower
    math(EXPR arg_TIMEOUT "${arg_TIMEOUT} * 4")
    math(EXPR arg_TIMEOUT_LARGE "${arg_TIMEOUT_LARGE} * 4")
    math(EXPR arg_MPI_TIMEOUT "${arg_MPI_TIMEOUT} * 4")
  endif()
  add_executable(${target} ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE am_test_support)
  string(REPLACE ";" "|" labels "${arg_LABELS}")
  string(REPLACE ";" "|" environment "${arg_ENVIRONMENT};${AM_TEST_ENVIRONMENT}")
  string(REPLACE ";" "|" mpi_environment "${AM_MPI_TEST_ENVIRONMENT}")
  string(REPLACE ";" "|" mpiexec_flags "${AM_MPIEXEC_FLAGS}")
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND}
            -D "EXE=$<TARGET_FILE:${target}>" -D "OUT=${ctest_file}" -D "LAYER=${arg_LAYER}"
            -D "TIMEOUT=${arg_TIMEOUT}" -D "TIMEOUT_LARGE=${arg_TIMEOUT_LARGE}"
            -D "LABELS=${labels}" -D "ENVIRONMENT=${environment}"
            -D "MPIEXEC=${AM_MPIEXEC}" -D "MPIEXEC_NUMPROC_FLAG=${AM_MPIEXEC_NUMPROC_FLAG}"
            -D "MPIEXEC_FLAGS=${mpiexec_flags}" -D "MPI_ENVIRONMENT=${mpi_environment}"
            -D "MPI_TIMEOUT=${arg_MPI_TIMEOUT}"
            -P "${AM_TESTS_CMAKE_DIR}/am_discover.cmake"
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
       "if(EXISTS \"${ctest_file}\")\n"
       "  include(\"${ctest_file}\")\n"
       "else()\n"
       "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
