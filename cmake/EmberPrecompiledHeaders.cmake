# Precompiled headers. A clean build compiles ~300 files on CI's two cores, and parsing the
# headers nearly every file of a target shares (fmt, the standard library, the tensor and
# dispatcher headers, doctest) is 2-4 s of each file's 5-12 s. A target that calls
# ember_precompile parses them once.
#
# The headers go first into every C++ file of the target, so a file that forgets one of its
# includes would still compile here: the asan preset sets CMAKE_DISABLE_PRECOMPILE_HEADERS, which
# keeps every file's own includes checked. CUDA files (.cu) never take a precompiled header.

# The standard and third-party headers every part of ember includes.
set(EMBER_PCH_COMMON <algorithm> <functional> <memory> <optional> <string> <unordered_map>
  <vector> <fmt/format.h>)

# ember_precompile(<target> HEADERS <header>...): the common headers and each <header>
# (<system.h>, or a project header as "dir/name.h") precompiled once for <target>'s C++ files.
function(ember_precompile target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "HEADERS")
  set(headers ${EMBER_PCH_COMMON})
  foreach(header IN LISTS ARG_HEADERS)
    if(header MATCHES "^<")
      list(APPEND headers "${header}")
    else()
      list(APPEND headers "${PROJECT_SOURCE_DIR}/${header}")
    endif()
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
