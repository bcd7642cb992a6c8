# Smoke test of the UCX baseline of am_pingpong / am_flood (bench/lib/ucx_baseline.*); run
# by CTest as `cmake -D... -P check_ucx_baseline.cmake`. Never looks at the figures' values,
# only at their presence and form.
#
#   BENCH      the benchmark program
#   ARGS       its arguments, separated by '|' (the test adds --json)
#   MODE       present: ucx_perftest on PATH is used. When it is installed, every expected UCX
#                       line must be there and well-formed; when it is not, the skip note must be.
#              missing: --ucx-perftest names a file that does not exist; the benchmark must
#                       still run, print its am lines and the skip note, and no UCX line.
#   EXPECT     "op:bytes:metric" of the UCX results that must be present (MODE present),
#              separated by '|'
#   RATIO      the ratio metric of am/ucx lines, one per expected bytes at least
#   REPS       expected `reps` of each UCX line (--reps times --rounds)
#   OK_STATUS  list of accepted exit statuses (3: the MPI baseline was not built)
#
# Both modes also check the am side's long messages when it streamed them (am_pingpong with
# long sizes >= 64 KiB): the receivers read every long payload and checked its sum, and said
# so on stderr with no wrong sum (a wrong one fails the run).
cmake_minimum_required(VERSION 3.25)

foreach(_v BENCH ARGS MODE REPS OK_STATUS)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_ucx_baseline: ${_v} not set")
  endif()
endforeach()

string(REPLACE "|" ";" _args "${ARGS}")
string(REPLACE "|" ";" EXPECT "${EXPECT}")
list(APPEND _args --json)
set(_installed FALSE)
if(MODE STREQUAL "missing")
  list(APPEND _args --ucx-perftest /nonexistent/ucx_perftest)
else()
  find_program(_ucx ucx_perftest NO_CACHE)
  if(_ucx)
    set(_installed TRUE)
  elseif("$ENV{AM_REQUIRE_ALL_TESTS}" STREQUAL "1")
    # CI: the UCX lines cannot go unchecked for want of a package.
    message(FATAL_ERROR "check_ucx_baseline: ucx_perftest is not installed (Debian ucx-utils), "
                        "and AM_REQUIRE_ALL_TESTS=1")
  endif()
endif()

execute_process(COMMAND ${BENCH} ${_args}
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 110)
if(NOT _rc IN_LIST OK_STATUS)
  message(FATAL_ERROR "${BENCH} ${_args}: status ${_rc} (want one of ${OK_STATUS})\n${_err}")
endif()

# Every stdout line is a JSON object with the eleven keys; collect the ucx ones.
string(REPLACE "\n" ";" _lines "${_out}")
set(_am 0)
set(_ucx_lines "")
set(_ratios "")
set(_hop FALSE)
set(_long_stream FALSE)
foreach(_line IN LISTS _lines)
  if(_line STREQUAL "")
    continue()
  endif()
  foreach(_key bench system transport ranks op bytes metric median min max reps)
    string(JSON _${_key} ERROR_VARIABLE _jerr GET "${_line}" ${_key})
    if(_jerr)
      message(FATAL_ERROR "malformed result line (${_key}: ${_jerr}): ${_line}")
    endif()
  endforeach()
  if(_system STREQUAL "am")
    math(EXPR _am "${_am} + 1")
    if(_op STREQUAL "long" AND _metric STREQUAL "bandwidth_GBps")
      set(_long_stream TRUE)
    endif()
  elseif(_system STREQUAL "am/ucx")
    list(APPEND _ratios "${_op}:${_bytes}:${_metric}")
  elseif(_system STREQUAL "cacheline" AND _transport STREQUAL "ucx-sm")
    set(_hop TRUE)
  elseif(_system STREQUAL "ucx")
    if(NOT _transport STREQUAL "ucx-sm" OR NOT _ranks EQUAL 2 OR NOT _reps EQUAL REPS)
      message(FATAL_ERROR "UCX line with wrong transport, ranks or reps (want ${REPS}): ${_line}")
    endif()
    # min <= median <= max, all positive (CMake compares these decimals as numbers).
    if(NOT _min GREATER 0 OR _median LESS _min OR _max LESS _median)
      message(FATAL_ERROR "UCX line with inconsistent figures: ${_line}")
    endif()
    list(APPEND _ucx_lines "${_op}:${_bytes}:${_metric}")
  endif()
endforeach()

if(_am EQUAL 0)
  message(FATAL_ERROR "no am result line:\n${_out}\n${_err}")
endif()
if(_long_stream AND NOT _err MATCHES
   "long payloads read by their receivers: [1-9][0-9]* checked, 0 wrong sum")
  message(FATAL_ERROR "the long stream ran but its receivers did not report reading and "
                      "checking the payloads:\n${_err}")
endif()
string(REGEX MATCHALL "UCX baseline skipped" _notes "${_err}")
list(LENGTH _notes _note_count)

if(MODE STREQUAL "missing" OR NOT _installed)
  if(NOT _ucx_lines STREQUAL "" OR NOT _note_count EQUAL 1)
    message(FATAL_ERROR "want no UCX line and one skip note, got lines '${_ucx_lines}' and "
                        "${_note_count} notes:\n${_err}")
  endif()
  if(NOT _installed AND NOT MODE STREQUAL "missing")
    message(STATUS "ucx_perftest is not installed: checked the skip note only")
  endif()
  return()
endif()

if(NOT _note_count EQUAL 0)
  message(FATAL_ERROR "ucx_perftest is installed but the baseline was skipped:\n${_err}")
endif()
if(NOT _hop)
  message(FATAL_ERROR "no cache-line hop line of the UCX run:\n${_out}")
endif()
foreach(_want IN LISTS EXPECT)
  list(FIND _ucx_lines "${_want}" _at)
  if(_at LESS 0)
    message(FATAL_ERROR "no UCX line ${_want} (got: ${_ucx_lines}):\n${_err}")
  endif()
  string(REGEX REPLACE "^[^:]*:([0-9]+):.*$" "\\1" _bytes "${_want}")
  string(REGEX MATCH "[^;]*:${_bytes}:${RATIO}" _ratio "${_ratios}")
  if(_ratio STREQUAL "")
    message(FATAL_ERROR "no am/ucx ${RATIO} line at ${_bytes} bytes (got: ${_ratios})")
  endif()
endforeach()
list(LENGTH EXPECT _n_want)
list(LENGTH _ucx_lines _n_got)
if(NOT _n_got EQUAL _n_want)
  message(FATAL_ERROR "want exactly the UCX lines ${EXPECT}, got ${_ucx_lines}")
endif()
