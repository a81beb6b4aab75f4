// torch.nn.functional.embedding_bag: sums, means or maxima of bags of rows of an embedding table,
// as a composite of registry ops (embedding, index_add, cumsum, sort, gather), so autograd, CUDA
// and the compile stage's capture come from the ops it calls.
//
// How the bags are found: offsets become a bag id per index, cumsum(index_add(zeros[N + 1],
// offsets, ones)) - 1 (ATen's make_offset2bag), all on the device. Indices past the last bag
// (include_last_offset) and indices equal to padding_idx get the id of an extra "sink" bag that
// is dropped at the end, so they add nothing to any bag and receive no gradient.
//   sum:  index_add of the rows (times per_sample_weights) into zeros [bags + 1, D];
//   mean: that sum over max(count, 1), count the bag's indices other than padding_idx;
//   max:  per column, the indices are ordered by (bag, value descending, position) with two
//         stable sorts, and each bag takes its first: the first maximum in the bag's order gets
//         the gradient, as PyTorch's strict `>` keeps the first. Empty bags give zeros.
// bfloat16 and float16 tables are summed in float32 and rounded once, as PyTorch's CPU kernels.
//
// What is read on the host: nothing the result needs. The values checks (offsets[0] == 0,
// offsets non-decreasing and at most the input's length, every index in [0, num_embeddings)) read
// offsets and the indices' extremes on the host, so they run for CPU tensors outside a capture,
// as binary_cross_entropy's range check; a compiled step captures embedding_bag whole, without a
// graph break. On CUDA and inside a capture an index out of range is refused by the lookup op's own
// check (naming embedding) when its kernel runs, and offsets are taken as PyTorch's CUDA kernels
// take them: the first bag starts at 0 whatever offsets[0] is; an offset below 0 or past the
// input's length is refused when the kernels run, by index_add's range check (naming index_add);
// decreasing offsets act as if sorted (PyTorch's kernels assert on them).
#pragma once

#include <optional>

#include "runtime/tensor.h"

namespace ember::nn {

// torch's mode strings "sum", "mean", "max" (libtorch's torch::kSum, kMean, kMax).
enum class EmbeddingBagMode { Sum, Mean, Max };

// "sum", "mean" or "max", as PyTorch spells the mode.
const char* embedding_bag_mode_name(EmbeddingBagMode mode);

namespace functional {

using nn::EmbeddingBagMode;  // F::EmbeddingBagMode, beside the options that take it

// torch.nn.functional.embedding_bag's options (libtorch's F::EmbeddingBagFuncOptions, same order).
struct EmbeddingBagFuncOptions {
  Tensor offsets = {};                            // 1-D input only: where each bag starts
  std::optional<double> max_norm = std::nullopt;  // renorm the rows looked up first, as F::embedding
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;  // refused: ember's embedding has no frequency-scaled gradient
  EmbeddingBagMode mode = EmbeddingBagMode::Mean;
  bool sparse = false;               // refused: ember has no sparse gradients
  Tensor per_sample_weights = {};    // mode Sum only; the input's shape and the table's dtype
  bool include_last_offset = false;  // 1-D input: offsets holds one more entry, the end of the last bag
  std::optional<int64_t> padding_idx = std::nullopt;  // negative counts from the end
};

// F.embedding_bag with ember's argument order (weight, input, ...), as ember's embedding: weight
// [V, D] floating; input int64 or int32, either 2-D [B, N] (B bags of N indices; offsets must be
// undefined, and include_last_offset changes nothing, as in PyTorch since its fix of 2-D input
// with include_last_offset) or 1-D [N] with offsets [B] (int64 or int32; bag b holds
// input[offsets[b] : offsets[b + 1]], the last one up to N) or, with include_last_offset, offsets
// [B + 1] (the last bag ends at offsets[B]: indices past it belong to no bag, as the
// documentation and PyTorch's fast CPU path say; its slower path extends the last bag to N).
// Returns [B, D] in weight's dtype. Indices equal to padding_idx are left out of their bag, its
// mean's count included; an empty bag is zeros in every mode. With max_norm the rows looked up are
// renormed in place first, as F::embedding does (every index of the input, padding included, as
// PyTorch's). Mode Max differs from PyTorch's CPU kernel only for NaN: a NaN anywhere in a bag is
// its maximum (sort's order), where PyTorch keeps it only when it comes first.
Tensor embedding_bag(const Tensor& weight, const Tensor& input, const EmbeddingBagFuncOptions& options = {},
                     Where where = Where::current());

}  // namespace functional
}  // namespace ember::nn
