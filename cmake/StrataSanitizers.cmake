# Sanitized and fuzzing builds (docs/reliability.md).
#  -DSTRATA_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer on every target, aborting on the first
#                        report; with clang also float-cast-overflow (double -> integer conversions out of range,
#                        which GCC's UBSan does not check).
#  -DSTRATA_FUZZ=ON      (clang only) instruments every target for libFuzzer and builds the fuzz targets under
#                        tests/fuzz/ as fuzzers; without it the same targets are built as corpus replayers that
#                        ctest runs in every build.
option(STRATA_SANITIZE "Build everything with ASan + UBSan" OFF)
option(STRATA_FUZZ "Build libFuzzer targets (clang only; implies STRATA_SANITIZE)" OFF)

if(STRATA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "STRATA_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(STRATA_SANITIZE ON)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  add_link_options(-fsanitize=fuzzer-no-link)
endif()

if(STRATA_SANITIZE)
  set(strata_sanitizers address,undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    string(APPEND strata_sanitizers ",float-cast-overflow")
  endif()
  # Host C++ only: nvcc does not take these flags (the sanitized CI build turns the GPU backend off, .ci/sanitize).
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${strata_sanitizers};-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=${strata_sanitizers} -fno-sanitize-recover=all)
  message(STATUS "strata: sanitizers ${strata_sanitizers}")
endif()
