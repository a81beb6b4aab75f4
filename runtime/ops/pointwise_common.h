// Shape rules and OpDef helpers shared by the pointwise op files.
#pragma once

#include "runtime/ops/registry.h"

namespace ember::ops {

constexpr int kCpu = static_cast<int>(DeviceType::CPU);

// Broadcast shape of inputs 0 and 1, promoted dtype.
void binary_shape(const OpCall& call, OutputMetas& outputs);
// Broadcast shape, bool dtype (comparisons).
void compare_shape(const OpCall& call, OutputMetas& outputs);
// Input 0's shape and dtype.
void unary_shape(const OpCall& call, OutputMetas& outputs);
// Input 0's shape; floating dtype (integers become float32, like torch.exp on ints).
void unary_float_shape(const OpCall& call, OutputMetas& outputs);

// In-place binary ops: `b` must broadcast to `a`'s shape.
void check_inplace_broadcast(const OpCall& call);

// A pointwise OpDef with its CPU kernel, backward rule and functor name filled in.
OpDef pointwise_op(const char* name, const char* schema, ShapeRule infer, Kernel cpu_kernel,
                   BackwardRule backward, uint32_t save_inputs, uint32_t save_outputs,
                   const char* functor);

}  // namespace ember::ops
