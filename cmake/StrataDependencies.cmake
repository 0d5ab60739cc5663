# All third-party dependencies come from Debian bookworm packages (see README.md).
find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(TBB REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(Threads REQUIRED)

# ccache, when present, makes the clean-clone CI builds cheap on repeat runs.
find_program(STRATA_CCACHE ccache)
if(STRATA_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${STRATA_CCACHE})
endif()

# CUDA is optional and only detected: no component uses it yet (GPU replay, a planned validate/ component,
# would).
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  message(STATUS "strata: CUDA ${CUDAToolkit_VERSION} found (GPU backends enabled where implemented)")
else()
  message(STATUS "strata: CUDA not found; building the CPU-only configuration")
endif()

# Z3 (search/subst verifier): Debian's libz3-dev ships z3++.h and libz3.so but no CMake package config.
find_path(Z3_INCLUDE_DIR z3++.h REQUIRED)
find_library(Z3_LIBRARY z3 REQUIRED)
if(NOT TARGET Z3::z3)
  add_library(Z3::z3 UNKNOWN IMPORTED)
  set_target_properties(Z3::z3 PROPERTIES IMPORTED_LOCATION "${Z3_LIBRARY}"
                                          INTERFACE_INCLUDE_DIRECTORIES "${Z3_INCLUDE_DIR}")
endif()
