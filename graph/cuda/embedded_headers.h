// The kernels/*.h sources generated CUDA code includes, compiled into libember_graph at build time
// (cmake/EmbedSources.cmake) so NVRTC programs need no source tree at run time.
#pragma once

#include <span>
#include <string_view>

namespace ember::graph::cuda {

struct EmbeddedHeader {
  std::string_view name;  // the include name, e.g. "kernels/functors.h"
  std::string_view text;
};

std::span<const EmbeddedHeader> embedded_headers();

}  // namespace ember::graph::cuda
