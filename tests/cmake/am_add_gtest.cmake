# am_add_gtest(<target> LAYER <layer> SOURCES <file>...
#              [TIMEOUT <s>] [TIMEOUT_LARGE <s>] [LABELS <label>...] [ENVIRONMENT <VAR=value>...])
# (AM_TEST_ENVIRONMENT, when set by the caller, is added to every test's environment.)
# Builds a GoogleTest binary and registers each of its tests as a CTest test named
# am.<layer>.<fixture>_<test>.<transport>.np<N> (discovered after every build, see am_discover.cmake).
# Every test gets a TIMEOUT, the labels given plus its transport, and shm tests require the
# fixture that checks /dev/shm is clean at the end.
set(AM_TESTS_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(am_add_gtest target)
  cmake_parse_arguments(arg "" "LAYER;TIMEOUT;TIMEOUT_LARGE" "SOURCES;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 60)
  endif()
  if(NOT arg_TIMEOUT_LARGE)
    set(arg_TIMEOUT_LARGE ${arg_TIMEOUT})
  endif()
  if(AM_SANITIZE)  # instrumented code runs several times slower
    math(EXPR arg_TIMEOUT "${arg_TIMEOUT} * 4")
    math(EXPR arg_TIMEOUT_LARGE "${arg_TIMEOUT_LARGE} * 4")
  endif()
  add_executable(${target} ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE am_test_support)
  string(REPLACE ";" "|" labels "${arg_LABELS}")
  string(REPLACE ";" "|" environment "${arg_ENVIRONMENT};${AM_TEST_ENVIRONMENT}")
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND}
            -D "EXE=$<TARGET_FILE:${target}>" -D "OUT=${ctest_file}" -D "LAYER=${arg_LAYER}"
            -D "TIMEOUT=${arg_TIMEOUT}" -D "TIMEOUT_LARGE=${arg_TIMEOUT_LARGE}"
            -D "LABELS=${labels}" -D "ENVIRONMENT=${environment}"
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
