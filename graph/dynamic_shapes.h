// Dynamic shapes for ember::compile (see CompileOptions::dynamic): which dims of the caller's
// inputs may change size without a new compiled variant, and what a capture needs to know of them.
//
// fn is C++, so its host code (a size read into an int, a loop bound, a branch) cannot be traced
// symbolically: a graph holds the sizes of the call that captured it. A call that differs from a
// compiled entry only in dynamic dims is therefore captured again (fn runs eagerly once for those
// sizes), but the generated kernels take the dynamic sizes as run-time parameters
// (FusionOptions::dynamic_sizes), so the capture finds every kernel already compiled, and the
// entry does not count against cache_limit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/tensor.h"

namespace ember {

// Marks dim `dim` (negative counts from the end) of `tensor` dynamic for the compiled functions
// it is passed to, from their first capture on, as torch._dynamo.mark_dynamic does.
void mark_dynamic(const Tensor& tensor, int64_t dim, Where where = Where::current());

namespace graph {

// Bit d set for each dim of `tensor` that mark_dynamic marked.
uint32_t marked_dynamic_dims(const Tensor& tensor);

// Bit d set for every dim of a tensor of rank `rank`.
uint32_t all_dims(int rank);

// Per input: bit d set where inputs[i]'s dim d has a size other than captured[i]'s; 0 where the
// ranks differ (a rank change is no size change) or captured has no entry.
std::vector<uint32_t> changed_dims(std::span<const TensorMeta> captured, const std::vector<Tensor>& inputs);

// The sizes of the dims `dims` marks in `inputs`, each once: a capture's dynamic sizes.
std::vector<int64_t> dynamic_sizes(const std::vector<Tensor>& inputs, std::span<const uint32_t> dims);

// "input 0 dim 0 (32 -> 16)" for each marked dim, from the captured and the new sizes.
std::string describe_dims(std::span<const uint32_t> dims, std::span<const TensorMeta> captured,
                          const std::vector<Tensor>& inputs);

}  // namespace graph
}  // namespace ember
