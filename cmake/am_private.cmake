# Warnings as errors and sanitizers for the project's own code only, through a private
# interface target (never propagated to consumers).
add_library(am_private INTERFACE)
target_compile_options(am_private INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror)
if(AM_SANITIZE)
  string(REPLACE ";" "," _am_san "${AM_SANITIZE}")
  add_compile_options(-fsanitize=${_am_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  # -Og -g1 after the build type's flags: optimised as far as debugging allows (the sanitizers
  # want at least that much for speed), and GCC 12 compiles the template-heavy tests much
  # faster than at -O1 or -O2 with ASan+UBSan (tests/typed/errors_test.cpp: 27 s at -Og -g1,
  # 53 s at -O1 -g1, 149 s at -O2 -g), which keeps CI's sanitizer tiers in budget
  # (docs/testing.md). Stack traces keep file and line (-g1).
  add_compile_options(-Og -g1)
  add_link_options(-fsanitize=${_am_san})
endif()

# Internal assertions (AM_ASSERT, src/util/assert.hpp): checks of the library's own invariants,
# on in Debug and sanitizer builds, compiled out otherwise. ON or OFF forces them either way
# (e.g. a Release build with assertions: -DAM_ASSERT=ON).
set(AM_ASSERT "auto" CACHE STRING "Internal assertions: auto (Debug and sanitizer builds), ON, OFF")
set_property(CACHE AM_ASSERT PROPERTY STRINGS auto ON OFF)
string(TOLOWER "${AM_ASSERT}" _am_assert)
if(_am_assert STREQUAL "auto")
  if(AM_SANITIZE)
    target_compile_definitions(am_private INTERFACE AM_ENABLE_ASSERT=1)
  else()
    target_compile_definitions(am_private INTERFACE $<$<CONFIG:Debug>:AM_ENABLE_ASSERT=1>)
  endif()
elseif(AM_ASSERT)
  target_compile_definitions(am_private INTERFACE AM_ENABLE_ASSERT=1)
endif()
