# am_c_consumer(<target> <source> <am target>): a C program (C11) built against <am target> of
# an installed am, found before with find_package(am); configuring fails if am was installed
# without that target (an am built without MPI has neither am::aml nor am::mpix_am).
function(am_c_consumer target source am_target)
  if(NOT TARGET ${am_target})
    message(FATAL_ERROR "am was found, but without ${am_target}")
  endif()
  add_executable(${target} ${source})
  set_target_properties(${target} PROPERTIES
    C_STANDARD 11 C_STANDARD_REQUIRED ON LINKER_LANGUAGE CXX)  # libam_core is C++
  target_link_libraries(${target} PRIVATE ${am_target})
endfunction()
