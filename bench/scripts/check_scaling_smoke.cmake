# Smoke test of bench/core/scaling.cpp; run by CTest as `cmake -D... -P check_scaling_smoke.cmake`.
# Looks at the form of the output, not at the figures: every stdout line is a JSON object with
# the shared keys, and every op and metric is there for every rank count.
#
#   BENCH      the scaling program
#   TRANSPORT  threads, shm or mpi
#   RANKS      the rank counts, comma-separated (mpi: one)
cmake_minimum_required(VERSION 3.25)

foreach(_v BENCH TRANSPORT RANKS)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_scaling_smoke: ${_v} not set")
  endif()
endforeach()

set(_args --quick --json --transport ${TRANSPORT} --ranks ${RANKS})
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
  string(JSON _tp GET "${_line}" transport)
  if(NOT _bench STREQUAL "scaling" OR NOT _tp STREQUAL TRANSPORT)
    message(FATAL_ERROR "unexpected bench or transport: ${_line}")
  endif()
  string(JSON _r GET "${_line}" ranks)
  string(JSON _op GET "${_line}" op)
  string(JSON _m GET "${_line}" metric)
  list(APPEND _seen "${_r}:${_op}:${_m}")
endforeach()

string(REPLACE "," ";" _ranks "${RANKS}")
set(_want
  epoch_general:latency_us epoch_general:core_us_per_rank epoch_general:msgs_per_rank
  epoch_general:bytes_per_rank epoch_general:rounds
  epoch_depth0:latency_us epoch_depth0:rounds am_barrier:latency_us
  alltoall:latency_us alltoall:msgs_per_rank alltoall:batches_per_rank alltoall:bytes_per_rank
  memory:coalesce_kib memory:typed_kib memory:rss_setup_kib memory:rss_alltoall_kib
  memory:hwm_kib alltoall_routed:latency_us alltoall_routed:batches_per_rank
  memory_routed:buffers memory_routed:coalesce_kib memory_routed:rss_alltoall_kib)
foreach(_r IN LISTS _ranks)
  foreach(_w IN LISTS _want)
    if(NOT "${_r}:${_w}" IN_LIST _seen)
      message(FATAL_ERROR "missing ${_w} at ${_r} ranks in:\n${_out}")
    endif()
  endforeach()
endforeach()
message(STATUS "scaling smoke (${TRANSPORT}, ranks ${RANKS}): ${_rc}, form checked")
