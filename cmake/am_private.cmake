# Warnings as errors and sanitizers for the project's own code only, through a private
# interface target (never propagated to consumers).
add_library(am_private INTERFACE)
target_compile_options(am_private INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror)
if(AM_SANITIZE)
  string(REPLACE ";" "," _am_san "${AM_SANITIZE}")
  add_compile_options(-fsanitize=${_am_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_am_san})
endif()
