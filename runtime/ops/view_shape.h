// The shape rule view() and reshape() share, so that each names itself in its errors.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/dims.h"

namespace ember {

// `shape` with its one -1 resolved for an input of `numel` elements (shape `from`); an Error
// naming `op` when a size is negative, -1 appears twice, or the element counts differ.
Dims infer_view_shape(std::string_view op, const Dims& shape, int64_t numel, const Dims& from);

}  // namespace ember
