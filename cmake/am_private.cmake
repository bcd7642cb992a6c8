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

# Stack-clash protection (-fstack-clash-protection): a function whose frame (a large local, an
# alloca) spans more than a page touches every page of it in order, so a frame that overflows
# an optimistic handler's stack faults in the 1 MiB guard gap below it whatever its size,
# instead of skipping the gap and writing into the stack mapped below (src/oam/stack.cpp).
# Optimistic handlers are the user's code, so the flag is part of the am::am target's usage
# requirements and of am.pc's Cflags (AM_STACK_CLASH_PROTECTION=OFF leaves users' flags alone;
# frames up to 1 MiB are caught either way). Debian's GCC does not turn it on by default.
option(AM_STACK_CLASH_PROTECTION
       "Compile the library and, through am::am and am.pc, its users with -fstack-clash-protection"
       ON)
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-fstack-clash-protection AM_HAVE_STACK_CLASH_PROTECTION)
set(AM_STACK_CLASH_FLAG "")
if(AM_STACK_CLASH_PROTECTION AND AM_HAVE_STACK_CLASH_PROTECTION)
  set(AM_STACK_CLASH_FLAG -fstack-clash-protection)
  target_compile_options(am_private INTERFACE ${AM_STACK_CLASH_FLAG})
endif()
