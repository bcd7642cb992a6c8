# The layer recipe of docs/layers.md, checked when the build is configured:
#   am_check_layers(<src dir>)       every folder of src/ has a README.md; every layer folder
#                                    (all but AM_NOT_LAYERS) is in src/runtime/layers.cpp: its
#                                    header included and one `make_layer<…>` entry per layer.
#   am_check_transport(<src dir>)    src/transport names no layer nor a call of one (the
#                                    collective kinds are named by the layers, at run time).
#   cmake -DAM_SRC=<src dir> -P cmake/am_check_layers.cmake      both, as a script (a test)
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.25)  # the project's policies (IN_LIST)
endif()
#
# The folders of src/ that are not layers (docs/layers.md, "Where a layer sits"): the parts
# below the layers (util, transport, core), the runtime that attaches them, and the two
# libraries above the runtime that use the public API or the layer interface without being
# attached to a rank (capi: the C API; mpix: MPIX_AM on the program's own MPI windows).
set(AM_NOT_LAYERS util transport core runtime capi mpix)

# The layer folders of `src`, in name order.
function(am_layer_folders src out)
  file(GLOB _entries LIST_DIRECTORIES true RELATIVE "${src}" "${src}/*")
  list(SORT _entries)
  set(_layers "")
  foreach(_d IN LISTS _entries)
    if(IS_DIRECTORY "${src}/${_d}" AND NOT _d IN_LIST AM_NOT_LAYERS)
      list(APPEND _layers "${_d}")
    endif()
  endforeach()
  set(${out} "${_layers}" PARENT_SCOPE)
endfunction()

function(am_check_layers src)
  file(GLOB _entries LIST_DIRECTORIES true RELATIVE "${src}" "${src}/*")
  foreach(_d IN LISTS _entries)
    if(IS_DIRECTORY "${src}/${_d}" AND NOT EXISTS "${src}/${_d}/README.md")
      message(FATAL_ERROR
        "am: src/${_d} has no README.md (what the folder is, its files, what it may include: "
        "docs/layers.md, \"Adding a layer to the library\").")
    endif()
  endforeach()
  am_layer_folders("${src}" _layers)
  file(READ "${src}/runtime/layers.cpp" _list)
  foreach(_l IN LISTS _layers)
    string(FIND "${_list}" "#include \"../${_l}/" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR
        "am: src/${_l} is a layer but src/runtime/layers.cpp does not include it: add its "
        "header and a line `{&my_layer::key, &make_layer<my_layer>}` to the list there, or, "
        "when it is no layer, its name to AM_NOT_LAYERS in cmake/am_check_layers.cmake "
        "(docs/layers.md).")
    endif()
  endforeach()
  string(REGEX MATCHALL "&make_layer<" _entries_made "${_list}")
  list(LENGTH _entries_made _made)
  list(LENGTH _layers _count)
  if(NOT _made EQUAL _count)
    message(FATAL_ERROR
      "am: src/runtime/layers.cpp makes ${_made} layers but src/ has ${_count} layer folders "
      "(${_layers}): one entry per layer (docs/layers.md).")
  endif()
endfunction()

function(am_check_transport src)
  am_layer_folders("${src}" _layers)
  list(REMOVE_ITEM _layers msg)  # `msg` is also the transport's word for a message
  list(REMOVE_ITEM _layers coll)  # and `coll` its word for a collective (coll_id, coll_kind)
  # A layer's folder or namespace, and the calls whose collectives the transport once listed.
  string(JOIN "|" _words ${_layers} mpix capi "am::msg" "src/msg" msg_layer "am::coll" "src/coll"
         coll_layer epochs? windows?
         traces? tracing rpcs?)
  set(_regex "(^|[^a-z0-9_])(${_words})([^a-z]|$)")
  file(GLOB_RECURSE _files "${src}/transport/*")
  foreach(_f IN LISTS _files)
    file(READ "${_f}" _text)
    string(TOLOWER "${_text}" _text)
    string(REGEX MATCH "${_regex}" _hit "${_text}")
    if(_hit)
      string(STRIP "${_hit}" _hit)
      message(FATAL_ERROR
        "am: ${_f} names \"${_hit}\", a layer or a call of one: the transport knows no layer "
        "(the layers name their collective kinds in the rank's transport::coll_names; "
        "docs/layers.md).")
    endif()
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND AM_SRC)
  am_check_layers("${AM_SRC}")
  am_check_transport("${AM_SRC}")
  message(STATUS "am: ${AM_SRC}: every folder has a README, every layer is listed, the "
                 "transport names no layer")
endif()
