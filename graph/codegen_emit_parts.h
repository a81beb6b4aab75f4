// Internal to the code generator: the pieces of a fused group's source that the CPU entry
// (graph/codegen_emit.cpp) and the CUDA kernel (graph/codegen_emit_cuda.cpp) share, so both
// targets run the same body text on the same loads and stores.
#pragma once

#include <functional>
#include <string>

#include "graph/fusion.h"

namespace ember::graph::codegen {

const char* storage_type(DType dtype);  // "float", "ember::BFloat16", ...
const char* compute_type(DType dtype);  // what the body computes in: float, or double for double

// The product of the group's kept dims (the elements the root writes), or of its reduced dims
// (`reduced`: the count summed into each), as source text: a literal when none of those dims is
// dynamic (FusedGroup::dynamic_dims), else the literal part times `sizes[d]` per dynamic dim.
std::string extent_text(const FusedGroup& group, bool reduced);

// `shape` for a comment of generated source, each dynamic dim shown as `?`: "[?, 256]". The text
// must not name a dynamic size, or the source would differ per size.
std::string shape_text(const Dims& shape, uint32_t dynamic_dims);

// `EMBER_FORCE_INLINE EMBER_HOST_DEVICE float fused_3_body(float x0, float x1, float& e0) {...}`:
// returns the last step's value and sets e<j> to export j's.
std::string emit_body(const FusedGroup& group);

// The body's input arguments: input k loaded at `index(k)` and converted to the compute type.
std::string loads(const FusedGroup& group, const std::function<std::string(size_t)>& index);

// `float* out`, `const bool* in<k>`, `float* ex<e>` (each in its own storage type) from `data` (an
// array expression holding output 0, the inputs, then the exports), each qualified with `restrict` (say
// "__restrict__"; the memory plan never lets a node's output share bytes with its inputs).
std::string pointer_declarations(const FusedGroup& group, const std::string& data, const std::string& restrict = "");

// `value` converted for storing into output 0 (store) or a tensor of `dtype` (store_as): 16-bit types
// round from float, the others convert directly (a bool step's 0 or 1 to false or true).
std::string store(const FusedGroup& group, const std::string& value);
std::string store_as(DType dtype, const FusedGroup& group, const std::string& value);

// The statements for one element: the body on `arguments`, its value stored at `target` (or
// added to it in double, for a reduction), each export stored at element `flat`.
std::string element(const FusedGroup& group, const std::string& arguments, const std::string& target,
                    const std::string& flat, const std::string& indent);

// The CUDA target's `extern "C" __global__` kernel of `group` (graph/codegen_emit_cuda.cpp).
std::string emit_cuda_entry(const FusedGroup& group);

}  // namespace ember::graph::codegen
