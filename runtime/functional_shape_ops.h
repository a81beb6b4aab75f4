// Composite shape and masking functions with PyTorch's semantics: split, chunk, unbind
// (functional_split.cpp), masked_fill, tril, triu (functional_mask.cpp), flip, repeat, roll
// (functional_reorder.cpp), pad (functional_pad.cpp). None has a registry op of its own: each
// calls the registry ops (slice, where, index_select, expand, cat, ...), which gives it autograd,
// CUDA, autocast and capture by the compile stage. Included by runtime/functional.h.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/tensor.h"

namespace ember {

// ---- pieces: views of the input (they share its storage), as torch.split/chunk/unbind ----
// Pieces of `split_size` along dim (the last one smaller when the size does not divide; one piece
// when split_size exceeds the size). split_size 0 only for a dim of size 0 (one empty piece).
// Note: split(t, {2}) is this overload (split_size 2), as in libtorch, not sizes {2}.
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0, Where where = Where::current());
// Pieces of the given sizes (non-negative, summing to the dim's size): torch.split_with_sizes.
std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& split_sizes, int64_t dim = 0,
                          Where where = Where::current());
std::vector<Tensor> split_with_sizes(const Tensor& a, const std::vector<int64_t>& split_sizes, int64_t dim = 0,
                                     Where where = Where::current());
// split with split_size ceil(size / chunks): may return fewer than `chunks` pieces (6 in 4 chunks
// gives sizes 2, 2, 2); a dim of size 0 gives `chunks` empty pieces. chunks must be > 0.
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0, Where where = Where::current());
// The size(dim) slices a.select(dim, i).
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0, Where where = Where::current());
// As in PyTorch, a piece of split/chunk/unbind (or a view of one) made in grad mode cannot be
// updated in place while recording gradients (an error names the function); without gradients
// (NoGradGuard, or nothing requires grad) it can, and the write shows in the input.

// ---- masking ----
// `a` where mask is false, `value` where it is true. mask must be bool; a, mask broadcast together
// (the result has the broadcast shape) and the result keeps a's dtype (value converted; a value
// an integer tensor cannot hold is an error). Gradients reach a (zero where masked) and a 0-d
// tensor value (the sum of the masked gradients), never the mask.
Tensor masked_fill(const Tensor& a, const Tensor& mask, double value, Where where = Where::current());
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value, Where where = Where::current());
// In place: mask broadcasts to a's shape (never a to mask's).
Tensor& masked_fill_(Tensor& a, const Tensor& mask, double value, Where where = Where::current());
Tensor& masked_fill_(Tensor& a, const Tensor& mask, const Tensor& value, Where where = Where::current());
// The lower (tril) or upper (triu) triangle of the last two dims, batched over the others: element
// (i, j) is kept where j - i <= diagonal (tril) or j - i >= diagonal (triu), else 0. Any dtype;
// the gradient is the same triangle of the output's gradient. The input needs >= 2 dims.
Tensor tril(const Tensor& a, int64_t diagonal = 0, Where where = Where::current());
Tensor triu(const Tensor& a, int64_t diagonal = 0, Where where = Where::current());
Tensor& tril_(Tensor& a, int64_t diagonal = 0, Where where = Where::current());
Tensor& triu_(Tensor& a, int64_t diagonal = 0, Where where = Where::current());

// ---- reordering (new tensors, never views) ----
// The elements in reverse order along each of `dims` (negative dims count from the end; a dim may
// appear once).
Tensor flip(const Tensor& a, const Dims& dims, Where where = Where::current());
// torch.Tensor.repeat: tiles a repeats[i] times along dim i; with more repeats than dims the
// tensor gains leading dims of size 1 first. repeats needs >= a.dim() entries, each >= 0.
Tensor repeat(const Tensor& a, const Dims& repeats, Where where = Where::current());
// Rotates the elements by shifts[i] along dims[i] (those leaving at the end come back at the
// start; negative shifts go the other way). Without dims: one shift of the flattened tensor.
Tensor roll(const Tensor& a, const Dims& shifts, const Dims& dims = {}, Where where = Where::current());

// ---- padding (runtime/functional_pad.cpp) ----
enum class PadMode { Constant, Reflect, Replicate, Circular };
// torch.nn.functional.pad: `pad` holds (before, after) pairs for the last dim, then the one
// before it, and so on. Constant mode fills with `value` (0 by default, converted to a's dtype) and
// takes negative pads (they crop). Reflect (mirror without repeating the edge), replicate (the
// edge repeated) and circular (wrapping) need pads that are >= 0 and below the dim's size (up to
// it for circular), and, as PyTorch's, pad only the last 1 to 3 dims of a tensor with one or two
// more (batch, channel). Any dtype; the gradient sums back into the positions copied.
Tensor pad(const Tensor& a, const std::vector<int64_t>& pad, PadMode mode = PadMode::Constant,
           std::optional<double> value = std::nullopt, Where where = Where::current());

}  // namespace ember
