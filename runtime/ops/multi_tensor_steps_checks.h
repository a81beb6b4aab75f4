// What the CPU and CUDA kernels of the multi-tensor optimizer steps (_multi_sgd_step_,
// _multi_adam_step_) share: slicing the flat input list into single-parameter calls, the checks,
// and the version bumps the dispatcher does for in-place ops (these ops are not InPlace ops).
#pragma once

#include "runtime/ops/registry.h"

namespace ember {

// sgd_step_ or adam_step_: the op each parameter's slice is a call of.
const OpDef& single_step_op(const OpCall& call);
// The number of parameters in the call.
int multi_step_count(const OpCall& call);
// Parameter `index`'s call of the single-parameter op (same attributes).
OpCall multi_step_slice(const OpCall& call, int index);
// Each slice passes the single op's checks; all parameters share one device and dtype; none
// that requires grad is updated with grad mode on.
void check_multi_step(const OpCall& call);
// Bumps the version of every tensor the step wrote (parameters and state).
void bump_multi_step_versions(const OpCall& call);

}  // namespace ember
