// einsum and tensordot (torch.einsum, torch.tensordot): composites of permute, reshape, sum, mul
// and bmm/mm, so autograd, CUDA, autocast and compile capture come with them. Included by
// runtime/functional.h; parsing in runtime/einsum_parse.cpp, contraction in runtime/einsum.cpp.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/dims.h"
#include "runtime/tensor.h"

namespace ember {

// einsum: the sum of products that `equation` writes in Einstein notation, as torch.einsum.
//
// Grammar (spaces are ignored anywhere):
//   equation  = operands [ "->" output ]
//   operands  = subscripts { "," subscripts }      one group per operand, in order
//   subscripts = { letter | "..." }                at most one "..." per group
//   output    = { letter | "..." }                 at most one "..."; no ","
//   letter    = a-z | A-Z                          case matters: 'i' and 'I' are two indices
//
// Semantics:
// - Each letter names one dim of its operand; a group without "..." names every dim, one with it
//   names the leading and trailing dims and "..." covers those between (possibly none).
// - The same letter in two operands is one index: its sizes must be equal, or one of them 1, which
//   broadcasts. The dims covered by "..." broadcast against each other right-aligned, as NumPy's.
// - A letter repeated within one operand takes that operand's diagonal over those dims ("ii->i"),
//   whose sizes must be equal.
// - The result has the output's dims in the output's order:
//     out[output indices] = sum over every other index of  prod_k operand_k[its indices]
//   An index absent from the output is summed out; with no "->" the output is "..." followed by the
//   letters that occur exactly once in the equation, upper case before lower case, each
//   alphabetically ("ij,jk" is "ij,jk->ik"; "ii" is "ii->", the trace). With an explicit output
//   that has no "...", the dims "..." covered are summed out.
// - One operand is permuted and summed; more are contracted left to right, two at a time, each
//   pair by one bmm over the indices they share (an index both hold and nothing later needs is
//   the bmm's inner dim), so a matrix product costs a matrix product's memory. No path search.
// - All operands must have one dtype (bmm's rule; torch.einsum refuses mixed dtypes there too). A
//   0-d operand has empty subscripts (",i->i"). Errors name einsum, the equation and the operand.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands, Where where = Where::current());

// tensordot: contracts dims_a of `a` with dims_b of `b` (pairwise, equal sizes or one of them 1),
// as torch.tensordot: the result has a's other dims, in order, then b's other dims. Computed as one
// mm of a permuted to [a's others, dims_a] and b to [dims_b, b's others]. Dims may be negative;
// both tensors must have one dtype.
Tensor tensordot(const Tensor& a, const Tensor& b, const Dims& dims_a, const Dims& dims_b,
                 Where where = Where::current());
// The last `dims` dims of a with the first `dims` of b (torch.tensordot(a, b, dims=int)).
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2, Where where = Where::current());

}  // namespace ember
