// grid_sample's coordinate rules (ATen's GridSampler.h), written with registry ops so that the
// gradient w.r.t. the grid comes from autograd: unnormalizing a grid coordinate into the input's
// index space, and the border / reflection padding of an index. Internal to
// functional_grid_sample.cpp.
#pragma once

#include <cstdint>

#include "runtime/nn/functional_grid_sample.h"
#include "runtime/tensor.h"

namespace ember::nn::functional::detail {

// [-1, 1] onto [0, S - 1] (align_corners: the corner pixels' centres) or [-0.5, S - 0.5] (their
// outer edges): ((g + 1) / 2) (S - 1), or ((g + 1) S - 1) / 2, in PyTorch's order of operations.
Tensor unnormalize_coordinate(const Tensor& coordinate, int64_t size, bool align_corners);

// compute_coordinates: border clamps into [0, S - 1]; reflection reflects about the edges, then
// clamps; zeros leaves the coordinate. Then a coordinate that is not finite or outside int32's range
// becomes -100, out of every input (safe_downgrade_to_int_range), as PyTorch's.
Tensor pad_coordinate(const Tensor& coordinate, int64_t size, GridSamplePadding padding, bool align_corners);

}  // namespace ember::nn::functional::detail
