# Decides whether the CUDA backend is built (EMBER_WITH_CUDA = AUTO / ON / OFF).
# The backend itself arrives with the CUDA issue; this file only finds the toolkit so that
# every later piece has one switch to read: EMBER_HAS_CUDA.
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
