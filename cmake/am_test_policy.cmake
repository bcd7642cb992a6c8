# Tests that need an optional package (valgrind, python3, Boost.MPI, ...) are registered only
# where it is installed. AM_REQUIRE_ALL_TESTS (CI: the environment variable of the same name
# is 1) turns a test left unregistered for want of a package into a configure error naming the
# test and the package, so that no test goes missing from CI unseen; scripts/test.sh then also
# fails a run in which a test reports itself skipped (docs/testing.md).
set(_am_require_default OFF)
if("$ENV{AM_REQUIRE_ALL_TESTS}" STREQUAL "1")
  set(_am_require_default ON)
endif()
option(AM_REQUIRE_ALL_TESTS "Fail the configure when a test cannot be registered for want of a package"
       ${_am_require_default})

# am_test_unavailable(<tests> <why>): <tests> are not registered because of <why> (which names
# the package to install).
function(am_test_unavailable tests why)
  if(AM_REQUIRE_ALL_TESTS)
    message(FATAL_ERROR "am: ${tests} cannot be registered: ${why} (AM_REQUIRE_ALL_TESTS=ON: "
                        "every test must run; scripts/deps.sh test installs what they need)")
  endif()
  # On stderr: scripts/test.sh hides the status lines, and a missing test should be seen.
  message(NOTICE "am: ${tests} not registered: ${why}")
endfunction()
