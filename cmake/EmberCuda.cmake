# Decides whether the CUDA backend is built (EMBER_WITH_CUDA = AUTO / ON / OFF) and, when it is,
# enables the CUDA language and finds the libraries the backend uses. Everything after this file
# reads one switch: EMBER_HAS_CUDA (also a compile definition on libember).
#
# Libraries are found in the toolkit first, then under the hint variables, so a GPU machine whose
# cuDNN/NCCL/CUPTI come from Python nvidia-* wheels works without the network:
#   -DEMBER_CUDNN_ROOT=.../site-packages/nvidia/cudnn  (likewise EMBER_NCCL_ROOT, EMBER_CUPTI_ROOT)
set(EMBER_HAS_CUDA OFF)
if(NOT EMBER_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(EMBER_HAS_CUDA ON)
  elseif(EMBER_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EMBER_WITH_CUDA=ON but no CUDA toolkit was found")
  endif()
endif()
message(STATUS "ember: CUDA toolkit ${CUDAToolkit_VERSION} found: ${EMBER_HAS_CUDA}")
if(NOT EMBER_HAS_CUDA)
  return()
endif()

# nvcc from the toolkit FindCUDAToolkit found, even when it is not on PATH.
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
endif()
# Ampere and Hopper machine code, plus Hopper PTX the driver can JIT for newer GPUs. gpu_check.sh
# overrides this with the local GPU's architecture only, to keep its build short.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
endif()
enable_language(CUDA)
# CMake 3.25 predates nvcc 13 and knows no flag for its C++20 mode; tell it the flag.
if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)

set(EMBER_CUDA_HINT_SUFFIXES lib lib64 include)
# Python wheels ship only the versioned library (libcudnn.so.9, no libcudnn.so), so the versioned
# name `soname` is searched too.
function(ember_find_cuda_library variable header library soname root_hint)
  find_path(${variable}_INCLUDE_DIR ${header}
    HINTS ${root_hint} ${CUDAToolkit_INCLUDE_DIRS} ENV ${variable}_ROOT PATH_SUFFIXES include)
  find_library(${variable}_LIBRARY NAMES ${library} ${soname}
    HINTS ${root_hint} ${CUDAToolkit_LIBRARY_DIR} ENV ${variable}_ROOT PATH_SUFFIXES lib lib64)
  if(${variable}_INCLUDE_DIR AND ${variable}_LIBRARY)
    set(${variable}_FOUND ON PARENT_SCOPE)
  else()
    set(${variable}_FOUND OFF PARENT_SCOPE)
  endif()
endfunction()
set(EMBER_CUDNN_ROOT "" CACHE PATH "Where cuDNN lives when it is not in the CUDA toolkit")
set(EMBER_NCCL_ROOT "" CACHE PATH "Where NCCL lives when it is not in the CUDA toolkit")
set(EMBER_CUPTI_ROOT "" CACHE PATH "Where CUPTI lives when it is not in the CUDA toolkit")
ember_find_cuda_library(EMBER_CUDNN cudnn.h cudnn libcudnn.so.9 "${EMBER_CUDNN_ROOT}")
ember_find_cuda_library(EMBER_NCCL nccl.h nccl libnccl.so.2 "${EMBER_NCCL_ROOT}")
ember_find_cuda_library(EMBER_CUPTI cupti.h cupti libcupti.so.13 "${EMBER_CUPTI_ROOT};${CUDAToolkit_ROOT}/extras/CUPTI")
message(STATUS "ember: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES}; cuDNN ${EMBER_CUDNN_FOUND}, "
               "NCCL ${EMBER_NCCL_FOUND}, CUPTI ${EMBER_CUPTI_FOUND}")

# Applied to libember when CUDA is on: kernel warnings are errors (EMBER_CUDA_WERROR, on for CI;
# gpu_check.sh turns it off so another host compiler cannot stop a GPU run), and device lambdas
# are allowed so one elementwise kernel can take any functor.
option(EMBER_CUDA_WERROR "Treat CUDA kernel compile warnings as errors (CI: on)" ON)
function(ember_add_cuda_to target)
  target_compile_definitions(${target} PUBLIC EMBER_HAS_CUDA)
  if(EMBER_CUDA_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>)
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda --expt-relaxed-constexpr
      -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-Wno-missing-field-initializers>)
  # cudart_static loads the driver with dlopen at first use, so binaries start on machines
  # without one; libcuda is never linked.
  target_link_libraries(${target} PRIVATE CUDA::cudart_static ${CMAKE_DL_LIBS})
  # cuBLASLt is loaded with dlopen on first use (runtime/cuda/cublaslt_library.h: linked, its
  # initializers cost every process 0.12 s before main), so only its headers and where it is.
  target_include_directories(${target} PRIVATE $<TARGET_PROPERTY:CUDA::cublasLt,INTERFACE_INCLUDE_DIRECTORIES>)
  # Only the loader reads where the library is: a changed path recompiles that one file.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/cuda/cublaslt_library.cpp PROPERTIES COMPILE_DEFINITIONS
    "EMBER_CUBLASLT_SONAME=\"libcublasLt.so.${CUDAToolkit_VERSION_MAJOR}\";EMBER_CUBLASLT_PATH=\"$<TARGET_FILE:CUDA::cublasLt>\"")
  # cuSOLVER likewise (runtime/cuda/cusolver_library.h). Its soname carries its own major version
  # (libcusolver.so.12 in CUDA 13), read from the file the build found.
  get_target_property(cusolver_file CUDA::cusolver IMPORTED_LOCATION)
  file(REAL_PATH "${cusolver_file}" cusolver_real)
  get_filename_component(cusolver_name "${cusolver_real}" NAME)
  string(REGEX MATCH "^libcusolver\\.so\\.[0-9]+" cusolver_soname "${cusolver_name}")
  set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/cuda/cusolver_library.cpp PROPERTIES COMPILE_DEFINITIONS
    "EMBER_CUSOLVER_SONAME=\"${cusolver_soname}\";EMBER_CUSOLVER_PATH=\"${cusolver_real}\"")
  # cuDNN (an optional layer_norm implementation, runtime/cuda/cudnn_*.cpp) only where it was
  # found; its libcudnn loads its engine libraries lazily and, like cudart_static, not libcuda.
  if(EMBER_CUDNN_FOUND)
    target_compile_definitions(${target} PUBLIC EMBER_HAS_CUDNN)
    target_include_directories(${target} PRIVATE ${EMBER_CUDNN_INCLUDE_DIR})
    target_link_libraries(${target} PRIVATE ${EMBER_CUDNN_LIBRARY})
  endif()
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
endfunction()
