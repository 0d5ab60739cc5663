# Test and benchmark targets, declared once: every suite is a GoogleTest executable discovered by ctest and
# run from the source root; every benchmark is a Google Benchmark program under tests/bench/, built only when
# the package is present. Both see STRATA_SOURCE_DIR for their data files.
include(GoogleTest)
if(STRATA_BUILD_BENCHMARKS)
  find_package(benchmark QUIET)
endif()

# strata_add_test_suite(<name> LIBS <libs...> SOURCES <files...>)
function(strata_add_test_suite name)
  cmake_parse_arguments(ARG "" "" "LIBS;SOURCES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE STRATA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  strata_target_defaults(${name})
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
endfunction()

# strata_add_benchmark(<name> <source under tests/bench/> LIBS <libs...>)
function(strata_add_benchmark name source)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  if(NOT STRATA_BUILD_BENCHMARKS OR NOT benchmark_FOUND)
    return()
  endif()
  add_executable(${name} ${PROJECT_SOURCE_DIR}/tests/bench/${source})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} benchmark::benchmark)
  target_compile_definitions(${name} PRIVATE STRATA_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  strata_target_defaults(${name})
endfunction()
