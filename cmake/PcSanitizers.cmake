# Sanitizer and fuzzing builds (scripts/sanitize.sh makes both).
#
#   PC_SANITIZE=address,undefined   ASan + UBSan on every pc target
#   PC_SANITIZE=thread              TSan
#   PC_FUZZ=ON                      coverage for libFuzzer on every target,
#                                   and test/fuzz's targets as libFuzzer
#                                   binaries (needs clang)
#
# Only pc's own code is instrumented: libMLIR, OpenMPI and OpenBLAS are
# Debian's. The flags go to C and C++ only (never to nvcc).
set(PC_SANITIZE "" CACHE STRING
  "Sanitizers for every pc target: address,undefined or thread (empty: none)")
option(PC_FUZZ "Build test/fuzz's targets with libFuzzer (clang only)" OFF)

set(pc_cxx "$<COMPILE_LANGUAGE:C,CXX>")
if(PC_SANITIZE)
  add_compile_options("$<${pc_cxx}:-fsanitize=${PC_SANITIZE}>"
    "$<${pc_cxx}:-fno-omit-frame-pointer>" "$<${pc_cxx}:-g1>")
  add_link_options("-fsanitize=${PC_SANITIZE}")
  if(PC_SANITIZE MATCHES "address")
    add_compile_options(
      "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include ${PROJECT_SOURCE_DIR}/cmake/PcAsanLlvm.h>")
  endif()
  if(PC_SANITIZE MATCHES "undefined")
    # Every finding fails the run. vptr needs RTTI, which code that uses
    # MLIR is built without.
    add_compile_options("$<${pc_cxx}:-fno-sanitize-recover=all>"
      "$<${pc_cxx}:-fno-sanitize=vptr>")
  endif()
endif()
if(PC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "PC_FUZZ needs clang (libFuzzer); configure with "
      "-DCMAKE_CXX_COMPILER=clang++-22, as scripts/sanitize.sh does")
  endif()
  add_compile_options("$<${pc_cxx}:-fsanitize=fuzzer-no-link>")
endif()
