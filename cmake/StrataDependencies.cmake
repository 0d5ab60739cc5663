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
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${STRATA_CCACHE})
endif()

# The GPU backend of validate/ (cuBLAS, cuDNN, NCCL; docs/validate.md, "GPU backend"). STRATA_CUDA=AUTO (the
# default) builds it when the CUDA toolkit, cuDNN and NCCL are all found, ON fails the configure step when one
# is missing, OFF never builds it. Only compiling needs the toolkit: running needs a GPU and its driver, and
# without them every GPU command says so (libcuda.so is loaded by the CUDA runtime at run time, not linked).
set(STRATA_CUDA AUTO CACHE STRING "Build the CUDA backend of strata validate: AUTO, ON or OFF")
set_property(CACHE STRATA_CUDA PROPERTY STRINGS AUTO ON OFF)
# Kept small so that CI compiles few device images: A100 (sm_80) and H100/H200 (sm_90); PTX for sm_90 lets
# the driver compile for newer GPUs.
set(STRATA_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "CUDA architectures of the GPU backend")
set(STRATA_HAVE_CUDA OFF)
if(NOT STRATA_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STRATA_CUDA='${STRATA_CUDA}': expected AUTO, ON or OFF")
endif()
if(NOT STRATA_CUDA STREQUAL "OFF")
  # Debian bookworm's CMake 3.25.1 marks CUDA::nvToolsExt deprecated without checking that the target exists,
  # and CUDA 13 ships no libnvToolsExt (NVTX is header-only nvtx3 since CUDA 10), so find_package stops the
  # configure step with "set_property could not find TARGET CUDA::nvToolsExt" (fixed in CMake 3.25.2's
  # FindCUDAToolkit). strata uses no NVTX: an empty stand-in target lets the module finish.
  if(CMAKE_VERSION VERSION_LESS 3.25.2 AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  endif()
  find_package(CUDAToolkit QUIET)
  set(strata_cuda_missing "")
  if(CUDAToolkit_FOUND)
    # cuDNN and NCCL install beside the toolkit (lib64/ or lib/) or in the system's folders.
    set(strata_cuda_hints ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    find_path(STRATA_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(STRATA_CUDNN_LIBRARY cudnn HINTS ${strata_cuda_hints})
    find_path(STRATA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
    find_library(STRATA_NCCL_LIBRARY nccl HINTS ${strata_cuda_hints})
    find_program(STRATA_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR})
    foreach(var STRATA_NVCC STRATA_CUDNN_INCLUDE_DIR STRATA_CUDNN_LIBRARY STRATA_NCCL_INCLUDE_DIR STRATA_NCCL_LIBRARY)
      if(NOT ${var})
        list(APPEND strata_cuda_missing ${var})
      endif()
    endforeach()
    # nvcc must also work with this machine's host compiler (a toolkit older than the GCC refuses it): tried on
    # a test project first, so that AUTO falls back to the CPU-only build instead of failing.
    if(STRATA_NVCC AND NOT CMAKE_CUDA_COMPILER)
      include(CheckLanguage)
      set(ENV{CUDACXX} ${STRATA_NVCC})
      check_language(CUDA)
      if(NOT CMAKE_CUDA_COMPILER)
        list(APPEND strata_cuda_missing "a working nvcc (${STRATA_NVCC} failed check_language(CUDA))")
      endif()
    endif()
  else()
    set(strata_cuda_missing "the CUDA toolkit (find_package(CUDAToolkit))")
  endif()
  if(strata_cuda_missing)
    if(STRATA_CUDA STREQUAL "ON")
      message(FATAL_ERROR "STRATA_CUDA=ON but not found: ${strata_cuda_missing}")
    endif()
    message(STATUS "strata: GPU backend NOT built (not found: ${strata_cuda_missing}); --device cuda and "
                   "--backend nccl will say so")
  else()
    set(CMAKE_CUDA_ARCHITECTURES ${STRATA_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    set(STRATA_HAVE_CUDA ON)
    foreach(lib cudnn nccl)
      string(TOUPPER ${lib} LIB)
      add_library(strata::${lib} UNKNOWN IMPORTED)
      set_target_properties(strata::${lib} PROPERTIES IMPORTED_LOCATION "${STRATA_${LIB}_LIBRARY}"
                                                      INTERFACE_INCLUDE_DIRECTORIES "${STRATA_${LIB}_INCLUDE_DIR}")
    endforeach()
    message(STATUS "strata: GPU backend built: CUDA ${CUDAToolkit_VERSION} (architectures "
                   "${STRATA_CUDA_ARCHITECTURES}), cuBLAS, cuDNN ${STRATA_CUDNN_LIBRARY}, NCCL ${STRATA_NCCL_LIBRARY}")
  endif()
else()
  message(STATUS "strata: GPU backend NOT built (STRATA_CUDA=OFF)")
endif()

# Z3 (search/subst verifier): Debian's libz3-dev ships z3++.h and libz3.so but no CMake package config.
find_path(Z3_INCLUDE_DIR z3++.h REQUIRED)
find_library(Z3_LIBRARY z3 REQUIRED)
if(NOT TARGET Z3::z3)
  add_library(Z3::z3 UNKNOWN IMPORTED)
  set_target_properties(Z3::z3 PROPERTIES IMPORTED_LOCATION "${Z3_LIBRARY}"
                                          INTERFACE_INCLUDE_DIRECTORIES "${Z3_INCLUDE_DIR}")
endif()
