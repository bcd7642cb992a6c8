# Smoke test of containers_bench; run by CTest as `cmake -D... -P check_dist_smoke.cmake`.
# Looks at the form of the output, not at the figures: the program exits 0, every stdout line
# is a JSON object with the shared keys, bench "dist" and a positive median, and every op, key
# size and distribution has its am ops_per_s line on threads and shm at 2 ranks, its std_umap
# (std::unordered_map) line and its am/std ratio line, and, with BASELINE on (all ops but dsu),
# its mpi_alltoallv line and its am/mpi ratio line.
#
#   BENCH     the containers_bench program
#   ARGS      its arguments, separated by '|' (--quick: 2 ranks, threads and shm)
#   BASELINE  ON when the MPI baseline was built
cmake_minimum_required(VERSION 3.25)

foreach(_v BENCH ARGS BASELINE)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_dist_smoke: ${_v} not set")
  endif()
endforeach()

string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND ${BENCH} ${_args}
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc TIMEOUT 18)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${BENCH} ${_args}: status ${_rc}\n${_err}")
endif()

set(_seen "")
string(REPLACE "\n" ";" _lines "${_out}")
foreach(_line IN LISTS _lines)
  if(_line STREQUAL "")
    continue()
  endif()
  foreach(_k bench system transport ranks op bytes metric median min max reps)
    string(JSON _value ERROR_VARIABLE _jerr GET "${_line}" ${_k})
    if(_jerr)
      message(FATAL_ERROR "not a JSON line with key '${_k}': ${_line}\n${_jerr}")
    endif()
    set(_${_k} "${_value}")
  endforeach()
  if(NOT _bench STREQUAL "dist" OR NOT _ranks EQUAL 2 OR NOT _median GREATER 0)
    message(FATAL_ERROR "unexpected bench, ranks or median: ${_line}")
  endif()
  list(APPEND _seen "${_system}:${_transport}:${_op}:${_bytes}:${_metric}")
endforeach()

foreach(_op map_insert counting_set set_insert visit bag dsu)
  foreach(_name ${_op} ${_op}.powerlaw)
    foreach(_b 8 32)
      set(_want "std_umap:none:${_name}:${_b}:ops_per_s")
      if(BASELINE AND NOT _op STREQUAL "dsu")
        list(APPEND _want "mpi_alltoallv:mpi:${_name}:${_b}:ops_per_s")
      endif()
      foreach(_tp threads shm)
        list(APPEND _want "am:${_tp}:${_name}:${_b}:ops_per_s"
             "am/std:${_tp}:${_name}:${_b}:ratio_am_rank_over_std")
        if(BASELINE AND NOT _op STREQUAL "dsu")
          list(APPEND _want "am/mpi:${_tp}:${_name}:${_b}:ratio_am_over_mpi")
        endif()
      endforeach()
      foreach(_w IN LISTS _want)
        if(NOT "${_w}" IN_LIST _seen)
          message(FATAL_ERROR "missing ${_w} in:\n${_out}")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
message(STATUS "containers_bench smoke: ${_rc}, form checked")
