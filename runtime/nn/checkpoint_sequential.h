// torch.utils.checkpoint.checkpoint_sequential: a Sequential run in `segments` parts, each but the
// last under utils::checkpoint, so backward keeps only the activations at the segments' borders
// and those of the last segment, and recomputes each other segment's when it gets there.
#pragma once

#include <cstdint>

#include "runtime/autograd/checkpoint.h"
#include "runtime/nn/modules/sequential.h"

namespace ember::utils {

// As PyTorch's: the modules are cut into segments of size() / segments modules (the last takes the
// rest); segments must be between 1 and the number of modules.
Tensor checkpoint_sequential(const nn::Sequential& model, int64_t segments, const Tensor& input,
                             CheckpointOptions options = {}, Where where = Where::current());

}  // namespace ember::utils
