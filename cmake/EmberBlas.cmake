# Decides whether the CPU GEMM uses OpenBLAS (EMBER_WITH_OPENBLAS = AUTO / ON / OFF); without it,
# Eigen's product does the work. Sets EMBER_HAS_OPENBLAS and, when on, EMBER_OPENBLAS_LIBRARY and
# EMBER_OPENBLAS_INCLUDE_DIR for runtime/CMakeLists.txt.
#
# Only the OpenMP build of OpenBLAS is accepted (Debian: libopenblas-openmp-dev). Our kernels call
# it from inside our own OpenMP regions, one tile per thread, and need it single-threaded and
# bit-reproducible there. Debian's serial build gives different bits inside an OpenMP region than
# outside one (measured: ulp-level differences on a 128x256x1024 product), which would make
# results depend on set_num_threads. The generic libopenblas.so is whichever build the Debian
# alternatives system points at, so the library is taken from the openmp variant's own folder and
# libember keeps that folder in its run path.
set(EMBER_HAS_OPENBLAS OFF)
if(NOT EMBER_WITH_OPENBLAS STREQUAL "OFF")
  set(_ember_blas_hints ${EMBER_OPENBLAS_ROOT} /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp)
  find_library(EMBER_OPENBLAS_LIBRARY NAMES openblas HINTS ${_ember_blas_hints} PATH_SUFFIXES lib
               NO_DEFAULT_PATH)
  find_path(EMBER_OPENBLAS_INCLUDE_DIR cblas.h
            HINTS ${EMBER_OPENBLAS_ROOT} /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
            PATH_SUFFIXES include NO_DEFAULT_PATH)
  if(EMBER_OPENBLAS_LIBRARY AND EMBER_OPENBLAS_INCLUDE_DIR)
    set(EMBER_HAS_OPENBLAS ON)
  elseif(EMBER_WITH_OPENBLAS STREQUAL "ON")
    message(FATAL_ERROR "EMBER_WITH_OPENBLAS=ON but the OpenMP build of OpenBLAS was not found "
                        "(apt-get install libopenblas-openmp-dev, or set EMBER_OPENBLAS_ROOT)")
  endif()
endif()
message(STATUS "ember: OpenBLAS (OpenMP build) for the CPU GEMM: ${EMBER_HAS_OPENBLAS} ${EMBER_OPENBLAS_LIBRARY}")

# Gives libember (the target `target`) OpenBLAS's headers and the path of the library found, which
# kernels/cpu/openblas_library.cpp opens on first use. It is not linked: a linked OpenBLAS picks its
# CPU kernels when the process starts, before ember can steer the choice (openblas_library.h).
function(ember_add_openblas_to target)
  target_include_directories(${target} SYSTEM PRIVATE ${EMBER_OPENBLAS_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE EMBER_HAS_OPENBLAS EMBER_OPENBLAS_PATH="${EMBER_OPENBLAS_LIBRARY}")
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
endfunction()
