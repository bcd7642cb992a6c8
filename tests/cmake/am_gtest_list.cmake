# Included by the test discovery scripts (am_discover.cmake, unit/unit_discover.cmake), which
# run in script mode after a test binary is built.
#
# am_gtest_list(<out> <exe> <who>): sets <out> to the enabled tests of the GoogleTest binary
# <exe>, each as its --gtest_filter "<suite>.<test>" (a parameterised one
# "<prefix>/<fixture>.<test>/<param>"), in the binary's order; DISABLED_ tests and suites are
# left out. Fails, naming <who>, when the binary cannot list its tests.
function(am_gtest_list out exe who)
  execute_process(COMMAND "${exe}" --gtest_list_tests
                  OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${who}: ${exe} --gtest_list_tests failed (${rc}): ${err}")
  endif()
  string(REPLACE ";" "\\;" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(suite "")
  set(tests "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
      set(suite "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^  ([^ #]+)")
      set(test "${CMAKE_MATCH_1}")
      if(NOT test MATCHES "^DISABLED_" AND NOT suite MATCHES "(^|/)DISABLED_")
        list(APPEND tests "${suite}.${test}")
      endif()
    endif()
  endforeach()
  set(${out} "${tests}" PARENT_SCOPE)
endfunction()
