# Refuses a folder whose sources include, by a quoted path, a file outside the folders it may
# depend on: the one-way dependencies of docs/design.md, checked when the build is configured.
#   am_check_includes(<dir> <allowed dir>...)        from CMake code
#   cmake -DAM_DIR=<dir> "-DAM_ALLOWED=<dir>;..." -P cmake/am_check_includes.cmake   (a test)
# Quoted includes are resolved against the including file's folder (as the compiler does
# first); angle-bracket includes are left to the include path, which for a layer holds only
# the public headers and the core's layer interface (src/core/include).
function(am_check_includes dir)
  file(REAL_PATH "${dir}" _root)
  set(_allowed "${_root}")
  foreach(_a IN LISTS ARGN)
    file(REAL_PATH "${_a}" _ra)
    list(APPEND _allowed "${_ra}")
  endforeach()
  file(GLOB_RECURSE _files "${_root}/*.cpp" "${_root}/*.hpp" "${_root}/*.h" "${_root}/*.c")
  foreach(_f IN LISTS _files)
    file(STRINGS "${_f}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    get_filename_component(_fdir "${_f}" DIRECTORY)
    foreach(_line IN LISTS _lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" _inc "${_line}")
      if(NOT EXISTS "${_fdir}/${_inc}")
        continue()  # not relative to the file: found through the include path
      endif()
      file(REAL_PATH "${_fdir}/${_inc}" _target)
      set(_ok FALSE)
      foreach(_a IN LISTS _allowed)
        string(FIND "${_target}" "${_a}/" _at)
        if(_at EQUAL 0)
          set(_ok TRUE)
        endif()
      endforeach()
      if(NOT _ok)
        message(FATAL_ERROR
          "am: ${_f} includes \"${_inc}\" (${_target}), outside what its folder may use "
          "(${_allowed}). A layer talks to the core only through <am/core/layer.hpp>; "
          "see docs/layers.md.")
      endif()
    endforeach()
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND AM_DIR)
  am_check_includes("${AM_DIR}" ${AM_ALLOWED})
  message(STATUS "am: ${AM_DIR}: includes stay inside ${AM_ALLOWED}")
endif()
