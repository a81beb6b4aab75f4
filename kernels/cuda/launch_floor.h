// An empty kernel, launched through the runtime API exactly as ember's kernels are: what one
// launch costs the host before any of ember's own work. `ember-bench --micro cuda` reports it next
// to an eager op's host time (dispatch, allocation and launch), which it bounds from below.
#pragma once

namespace ember::cuda {

// Launches one block of one thread of a kernel that does nothing on `stream` (a cudaStream_t);
// returns the launch's cudaError_t as an int, as the other kernel entry points do.
int launch_empty_kernel(void* stream);

}  // namespace ember::cuda
