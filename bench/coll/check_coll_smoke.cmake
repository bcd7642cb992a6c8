# Smoke test of collectives_bench; run by CTest as `cmake -D... -P check_coll_smoke.cmake`.
# Looks at the form of the output, not at the figures: the program exits 0, every stdout line
# is a JSON object with the shared keys and bench "coll", and every op and size has its am
# latency line on threads and shm at 2 ranks, and, with BASELINE on, its mpi line and its am/mpi
# latency_ratio line (bcast and allreduce at 1 MiB: bandwidth and bandwidth_ratio too).
#
#   BENCH     the collectives_bench program
#   ARGS      its arguments, separated by '|'
#   BASELINE  ON when the MPI baseline was built
cmake_minimum_required(VERSION 3.25)

foreach(_v BENCH ARGS BASELINE)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_coll_smoke: ${_v} not set")
  endif()
endforeach()

string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND ${BENCH} ${_args}
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 110)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${BENCH} ${_args}: status ${_rc}\n${_err}")
endif()

set(_keys bench system transport ranks op bytes metric median min max reps)
set(_seen "")
string(REPLACE "\n" ";" _lines "${_out}")
foreach(_line IN LISTS _lines)
  if(_line STREQUAL "")
    continue()
  endif()
  foreach(_k IN LISTS _keys)
    string(JSON _value ERROR_VARIABLE _jerr GET "${_line}" ${_k})
    if(_jerr)
      message(FATAL_ERROR "not a JSON line with key '${_k}': ${_line}\n${_jerr}")
    endif()
  endforeach()
  string(JSON _bench GET "${_line}" bench)
  if(NOT _bench STREQUAL "coll")
    message(FATAL_ERROR "unexpected bench: ${_line}")
  endif()
  string(JSON _sys GET "${_line}" system)
  string(JSON _tp GET "${_line}" transport)
  string(JSON _op GET "${_line}" op)
  string(JSON _b GET "${_line}" bytes)
  string(JSON _m GET "${_line}" metric)
  string(JSON _med GET "${_line}" median)
  if(NOT _med GREATER 0)
    message(FATAL_ERROR "median not positive: ${_line}")
  endif()
  list(APPEND _seen "${_sys}:${_tp}:${_op}:${_b}:${_m}")
endforeach()

set(_points barrier:0 ctx_barrier:0 epoch:0 scan:8 bcast:8 bcast:1024 bcast:65536
  bcast:1048576 allreduce:8 allreduce:1024 allreduce:65536 allreduce:1048576 alltoall:8
  alltoall:1024)
foreach(_p IN LISTS _points)
  foreach(_tp threads shm)
    set(_want "am:${_tp}:${_p}:latency_us")
    if(BASELINE)
      list(APPEND _want "am/mpi:${_tp}:${_p}:latency_ratio")
    endif()
    if(_p MATCHES ":1048576$")
      list(APPEND _want "am:${_tp}:${_p}:bandwidth_GBps")
      if(BASELINE)
        list(APPEND _want "am/mpi:${_tp}:${_p}:bandwidth_ratio")
      endif()
    endif()
    foreach(_w IN LISTS _want)
      if(NOT "${_w}" IN_LIST _seen)
        message(FATAL_ERROR "missing ${_w} in:\n${_out}")
      endif()
    endforeach()
  endforeach()
  if(BASELINE AND NOT _p MATCHES "^ctx_barrier" AND NOT "mpi:mpi:${_p}:latency_us" IN_LIST _seen)
    message(FATAL_ERROR "missing the MPI line of ${_p} in:\n${_out}")
  endif()
endforeach()
message(STATUS "collectives_bench smoke: ${_rc}, form checked")
