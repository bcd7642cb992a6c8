# MPI programs that use am (tests/mpi, tests/aml, tests/mpix), started by mpiexec through
# tests/shm/amrun_check.sh (${_am_check}), which checks mpiexec's status, its output, the time
# taken and that /dev/shm is left clean. AM_MPIEXEC and friends come from ../CMakeLists.txt.
#
# am_mpi_program_test(<layer> <name> <configs> <seconds> [OK <text>] [LABELS <label>...]
#                     [ENVIRONMENT <VAR=value>...] [UNSET <VAR>...]
#                     [CHECKS <checker options>...] COMMAND <program> <args>...)
# registers am.<layer>.<name>.<variant>.np<N> for each <variant>:<N> of <configs> (a ;-list).
# The variant is am's node size: mpi (AM_NODE_SIZE=1, every message through MPI), mpimix
# (AM_NODE_SIZE=2, pairs of ranks in shared memory) or mpishm (AM_NODE_SIZE=0, all ranks of the
# host in shared memory); or the ucx transport with a node size: ucx (AM_TRANSPORT=ucx,
# AM_NODE_SIZE=1, every peer through UCX) or ucxmix (AM_NODE_SIZE=2, pairs in shared memory, the
# other pairs through UCX). OK <text>: the job must succeed with <text> printed once per process.
# Labels: mpi, the layer (unless it is mpi), the variant (unless it is mpi), and LABELS (so a
# ucx test carries mpi and ucx or ucxmix, as the semantic suites' ucx jobs do). The mpi* variants
# rely on am choosing mpi by itself under mpiexec: AM_TRANSPORT is unset, and so are the
# variables of UNSET. The ucx* variants are registered only where the ucx transport is built
# (AM_HAVE_UCX), and otherwise reported by am_test_unavailable. Sanitizer builds get
# 4 x <seconds>.
function(am_mpi_program_test layer name configs seconds)
  cmake_parse_arguments(arg "" "OK" "LABELS;ENVIRONMENT;UNSET;CHECKS;COMMAND" ${ARGN})
  foreach(config IN LISTS configs)
    string(REPLACE ":" ";" parts "${config}")
    list(GET parts 0 variant)
    list(GET parts 1 np)
    _am_mpi_program_one(${layer} ${name} ${variant} ${np} ${seconds})
  endforeach()
endfunction()

# One test of am_mpi_program_test (its arg_* variables are in scope).
function(_am_mpi_program_one layer name variant np seconds)
  set(node_size_mpi 1)
  set(node_size_mpimix 2)
  set(node_size_mpishm 0)
  set(node_size_ucx 1)
  set(node_size_ucxmix 2)
  set(test am.${layer}.${name}.${variant}.np${np})
  if(NOT DEFINED node_size_${variant})
    message(FATAL_ERROR "am_mpi_program_test(${name}): unknown variant ${variant}")
  endif()
  set(transport_env "")
  set(unset_transport AM_TRANSPORT)
  if(variant MATCHES "^ucx")
    if(NOT AM_HAVE_UCX)
      am_test_unavailable(${test} "the ucx transport is not built (AM_WITH_UCX=OFF, or UCX \
not found by pkg-config: Debian libucx-dev)")
      return()
    endif()
    set(transport_env AM_TRANSPORT=ucx)
    set(unset_transport "")
  endif()
  set(checks ${arg_CHECKS})
  if(DEFINED arg_OK)
    list(PREPEND checks --expect ok --stdout-count "${arg_OK}" ${np})
  endif()
  add_test(NAME ${test}
    COMMAND ${_am_check} ${checks} --
            ${AM_MPIEXEC} ${AM_MPIEXEC_NUMPROC_FLAG} ${np} ${AM_MPIEXEC_FLAGS} ${arg_COMMAND})
  set(labels mpi)
  foreach(label ${layer} ${variant})
    if(NOT label STREQUAL "mpi")
      list(APPEND labels ${label})
    endif()
  endforeach()
  list(APPEND labels ${arg_LABELS})
  set(timeout ${seconds})
  if(AM_SANITIZE)
    math(EXPR timeout "${timeout} * 4")
  endif()
  math(EXPR processors "(${np} + 1) / 2")  # 2 ranks per core: oversubscribed, not swamped
  set(environment ${AM_MPI_TEST_ENVIRONMENT} ${transport_env}
                  AM_NODE_SIZE=${node_size_${variant}} ${arg_ENVIRONMENT})
  set(unset)
  foreach(var ${unset_transport} ${arg_UNSET})
    list(APPEND unset ${var}=unset:)
  endforeach()
  set_tests_properties(${test} PROPERTIES
    TIMEOUT ${timeout} PROCESSORS ${processors} LABELS "${labels}" FIXTURES_REQUIRED am_shm_clean
    ENVIRONMENT "${environment}" ENVIRONMENT_MODIFICATION "${unset}")
endfunction()

# am_c11_program(<target> <source> <library>): a test program in strict C11 (no extensions: the
# C headers, aml.h and mpix_am.h, are strict C) against <library>, linked by the C++ driver (am
# is C++).
function(am_c11_program target source library)
  add_executable(${target} ${source})
  set_target_properties(${target} PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF LINKER_LANGUAGE CXX)
  target_link_libraries(${target} PRIVATE ${library} am_private)
endfunction()
