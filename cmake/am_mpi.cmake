# Which MPI a build uses (docs/transports.md, "Choosing the MPI"). Included by the top-level
# CMakeLists.txt when AM_WITH_MPI is on.
#
#   -DAM_MPI=            (default) what FindMPI finds: on Debian the `mpi` and `mpirun`
#                        alternatives, i.e. Open MPI unless the machine's admin chose otherwise
#   -DAM_MPI=openmpi     Open MPI  } the wrappers and launcher under Debian's names
#   -DAM_MPI=mpich       MPICH     } (mpicc.mpich, mpiexec.mpich), else the plain names
#
# MPI_C_COMPILER, MPI_CXX_COMPILER and MPIEXEC_EXECUTABLE given on the command line win (as
# with FindMPI alone). Whatever was chosen, the library (its mpi.h) and the launcher (its
# --version) are identified, and a build whose programs would be started by another MPI's
# launcher than the one they link (or not the AM_MPI asked for) stops here: such a job
# does not start, or starts N singletons.
#
# Sets AM_HAVE_MPI, and with MPI: AM_MPI_FLAVOR (openmpi, mpich or other), MPIEXEC_EXECUTABLE,
# the MPI_* variables of FindMPI (also for the CXX component, used by the baselines), and
# AM_MPI_LAUNCH_FLAGS / AM_MPI_LAUNCH_ENVIRONMENT (lists) for jobs with more ranks than cores.
set(AM_MPI "" CACHE STRING "MPI implementation: empty (what FindMPI finds), openmpi or mpich")
set_property(CACHE AM_MPI PROPERTY STRINGS "" openmpi mpich)
if(NOT AM_MPI MATCHES "^(|openmpi|mpich)$")
  message(FATAL_ERROR "am: AM_MPI=${AM_MPI}: expected openmpi, mpich or empty")
endif()

# The implementation an mpi.h belongs to, and its version (MPICH's derivatives, e.g. MVAPICH
# and Intel MPI, define MPICH_VERSION too and are started by Hydra).
function(_am_mpi_header_flavor out version)
  set(flavor other)
  set(v "")
  foreach(dir IN LISTS MPI_C_INCLUDE_DIRS)
    if(EXISTS "${dir}/mpi.h")
      file(STRINGS "${dir}/mpi.h" defines
           REGEX "^#define (OMPI_(MAJOR|MINOR|RELEASE)_VERSION|MPICH_VERSION) ")
      if(defines MATCHES "OMPI_MAJOR_VERSION ([0-9]+)")
        set(flavor openmpi)
        set(v ${CMAKE_MATCH_1})
        foreach(part MINOR RELEASE)
          if(defines MATCHES "OMPI_${part}_VERSION ([0-9]+)")
            string(APPEND v ".${CMAKE_MATCH_1}")
          endif()
        endforeach()
      elseif(defines MATCHES "MPICH_VERSION \"([^\"]*)\"")
        set(flavor mpich)
        set(v ${CMAKE_MATCH_1})
      endif()
      break()
    endif()
  endforeach()
  set(${out} ${flavor} PARENT_SCOPE)
  set(${version} "${v}" PARENT_SCOPE)
endfunction()

function(_am_mpi_launcher_flavor out)
  execute_process(COMMAND "${MPIEXEC_EXECUTABLE}" --version OUTPUT_VARIABLE text
                  ERROR_VARIABLE text RESULT_VARIABLE rc TIMEOUT 20)
  if(text MATCHES "Open MPI|OpenRTE")
    set(${out} openmpi PARENT_SCOPE)
  elseif(text MATCHES "HYDRA|MPICH")
    set(${out} mpich PARENT_SCOPE)
  else()
    set(${out} other PARENT_SCOPE)
  endif()
endfunction()

# A named implementation: prefer its Debian names, so that both can be installed side by side.
if(AM_MPI AND NOT MPI_C_COMPILER AND NOT MPI_EXECUTABLE_SUFFIX)
  find_program(_am_mpicc_suffixed NAMES mpicc.${AM_MPI} NO_CACHE)
  if(_am_mpicc_suffixed)
    set(MPI_EXECUTABLE_SUFFIX .${AM_MPI})
  endif()
endif()

set(AM_HAVE_MPI FALSE)
set(AM_MPI_FLAVOR "")
find_package(MPI COMPONENTS C OPTIONAL_COMPONENTS CXX)
if(TARGET MPI::MPI_C)
  if(NOT MPIEXEC_EXECUTABLE)
    message(FATAL_ERROR "am: MPI (${MPI_C_COMPILER}) was found but not its launcher; set "
                        "MPIEXEC_EXECUTABLE, or -DAM_WITH_MPI=OFF")
  endif()
  _am_mpi_header_flavor(_am_lib_flavor _am_lib_version)
  _am_mpi_launcher_flavor(_am_exec_flavor)
  if(NOT _am_lib_flavor STREQUAL _am_exec_flavor)
    message(FATAL_ERROR
      "am: the MPI library (${_am_lib_flavor}: ${MPI_C_INCLUDE_DIRS}) and the launcher "
      "(${_am_exec_flavor}: ${MPIEXEC_EXECUTABLE}) are not the same MPI. Set -DAM_MPI=openmpi "
      "or mpich in a fresh build directory, or MPIEXEC_EXECUTABLE to the library's launcher.")
  endif()
  if(AM_MPI AND NOT AM_MPI STREQUAL _am_lib_flavor)
    message(FATAL_ERROR
      "am: AM_MPI=${AM_MPI}, but the MPI found is ${_am_lib_flavor} (${MPI_C_COMPILER}, "
      "${MPIEXEC_EXECUTABLE}). Is it installed (Debian: libmpich-dev mpich, or libopenmpi-dev "
      "openmpi-bin)? FindMPI keeps what it found in the cache: use a fresh build directory.")
  endif()
  set(AM_HAVE_MPI TRUE)
  set(AM_MPI_FLAVOR ${_am_lib_flavor})
  # What a job of the tests (more ranks than cores, perhaps as root in a container) needs from
  # the launcher: Open MPI starts no more processes than cores and refuses root unless told;
  # MPICH's Hydra does both as it is.
  set(AM_MPI_LAUNCH_FLAGS "")
  set(AM_MPI_LAUNCH_ENVIRONMENT "")
  if(AM_MPI_FLAVOR STREQUAL "openmpi")
    set(AM_MPI_LAUNCH_FLAGS --oversubscribe)
    set(AM_MPI_LAUNCH_ENVIRONMENT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                                  OMPI_MCA_rmaps_base_oversubscribe=1)
  endif()
  message(STATUS "am: MPI: ${AM_MPI_FLAVOR} ${_am_lib_version} (MPI ${MPI_C_VERSION}; "
                 "${MPI_C_COMPILER}, launcher ${MPIEXEC_EXECUTABLE})")
elseif(AM_MPI)
  message(FATAL_ERROR "am: AM_MPI=${AM_MPI}, but no such MPI was found (Debian: apt-get install "
                      "libmpich-dev mpich, or libopenmpi-dev openmpi-bin)")
endif()

# am_mpi_check_library(<library file> <out>): whether a prebuilt library that uses MPI (e.g.
# Debian's Boost.MPI, built against Open MPI) links the build's MPI. <out> is "ok" when its
# MPI (a needed libmpi*.so.N) is the build's or when it names no MPI library, otherwise the
# MPI library it needs (a program linking both would have two MPIs in one process).
function(am_mpi_check_library file out)
  set(${out} ok PARENT_SCOPE)
  if(NOT CMAKE_OBJDUMP OR NOT EXISTS "${file}")
    return()
  endif()
  execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${file}" OUTPUT_VARIABLE dump ERROR_QUIET)
  string(REGEX MATCHALL "NEEDED +libmpi[^ \n]*" needed "${dump}")
  list(TRANSFORM needed REPLACE "NEEDED +" "")
  if(NOT needed)
    return()
  endif()
  foreach(lib IN LISTS MPI_C_LIBRARIES)
    execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${lib}" OUTPUT_VARIABLE lib_dump ERROR_QUIET)
    if(lib_dump MATCHES "SONAME +([^ \n]+)" AND CMAKE_MATCH_1 IN_LIST needed)
      return()
    endif()
  endforeach()
  list(JOIN needed ", " needed)
  set(${out} "${needed}" PARENT_SCOPE)
endfunction()
