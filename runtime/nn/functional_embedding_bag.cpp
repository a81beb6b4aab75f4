// F::embedding_bag (functional_embedding_bag.h): PyTorch's argument checks, then the bags' sums,
// means or maxima from a bag id per index, all with registry ops.
#include "runtime/nn/functional_embedding_bag.h"

#include <string>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/embedding_padding.h"
#include "runtime/nn/functional.h"

namespace ember::nn {

const char* embedding_bag_mode_name(EmbeddingBagMode mode) {
  switch (mode) {
    case EmbeddingBagMode::Sum:
      return "sum";
    case EmbeddingBagMode::Mean:
      return "mean";
    case EmbeddingBagMode::Max:
      return "max";
  }
  internal_assert(false, "embedding_bag_mode_name: an EmbeddingBagMode outside its three values");
  return "";
}

namespace functional {

namespace {

bool is_index_dtype(DType dtype) { return dtype == kInt64 || dtype == kInt32; }

std::string shape_or_undefined(const Tensor& tensor) {
  return tensor.defined() ? fmt::format("shape {}", tensor.sizes()) : std::string("undefined");
}

// PyTorch's checks that need no values: F.embedding_bag's and ATen's check_arguments.
void check_arguments(const Tensor& weight, const Tensor& input, const EmbeddingBagFuncOptions& options) {
  check(weight.defined() && input.defined(),
        "embedding_bag: weight and input must be defined, got weight {} and input {}", shape_or_undefined(weight),
        shape_or_undefined(input));
  // PyTorch once took (weight, input) and still swaps them with a warning; ember's order is that one.
  check(is_floating(weight.dtype()),
        "embedding_bag: weight must be floating-point, got {} (ember's argument order is (weight, input), as "
        "embedding's)",
        weight.dtype());
  check(weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor [num_embeddings, embedding_dim], got shape {}",
        weight.sizes());
  check(is_index_dtype(input.dtype()), "embedding_bag: input must be int64 or int32, got {} (shape {})", input.dtype(),
        input.sizes());
  const Tensor& weights = options.per_sample_weights;
  check(!weights.defined() || weights.sizes() == input.sizes(),
        "embedding_bag: If per_sample_weights ({}) is not null, then it must have the same shape as the input ({})",
        weights.defined() ? weights.sizes() : Dims{}, input.sizes());
  const Tensor& offsets = options.offsets;
  if (input.dim() == 2) {
    check(!offsets.defined(),
          "embedding_bag: if input is 2D, then offsets has to be undefined, as input is treated as a mini-batch of "
          "fixed length sequences; got offsets of shape {} for input of shape {}",
          offsets.defined() ? offsets.sizes() : Dims{}, input.sizes());
  } else {
    check(input.dim() == 1,
          "embedding_bag: input has to be a 1D or 2D Tensor, but got Tensor of dimension {} (shape {})", input.dim(),
          input.sizes());
    check(offsets.defined() && offsets.dim() == 1,
          "embedding_bag: offsets has to be a 1D Tensor for 1D input, got offsets {}", shape_or_undefined(offsets));
    check(is_index_dtype(offsets.dtype()), "embedding_bag: offsets must be int64 or int32, got {}", offsets.dtype());
    check(!options.include_last_offset || offsets.size(0) >= 1,
          "embedding_bag: include_last_offset: number of offset should be at least 1, got offsets of shape {}",
          offsets.sizes());
  }
  const bool max_mode = options.mode == EmbeddingBagMode::Max;
  check(!max_mode || !options.scale_grad_by_freq,
        "embedding_bag: max mode does not support scaling the gradient by the frequency");
  check(!max_mode || !options.sparse, "embedding_bag: max mode does not support sparse weights");
  check(!options.scale_grad_by_freq,
        "embedding_bag: scale_grad_by_freq is not supported: ember's embedding has no gradient scaled by frequency");
  check(!options.sparse, "embedding_bag: sparse=true needs sparse gradients, which ember does not have");
  check(!weights.defined() || options.mode == EmbeddingBagMode::Sum,
        "embedding_bag: per_sample_weights was not null. per_sample_weights is only supported for mode='sum' "
        "(got mode='{}')",
        embedding_bag_mode_name(options.mode));
  if (weights.defined())
    check(weights.dtype() == weight.dtype(), "embedding_bag: per_sample_weights must have weight's dtype {}, got {}",
          weight.dtype(), weights.dtype());
}

// padding_idx within [-V, V), as F.embedding_bag asserts, wrapped into [0, V).
std::optional<int64_t> wrapped_padding(std::optional<int64_t> padding_idx, int64_t count) {
  if (!padding_idx) return std::nullopt;
  return wrap_padding_idx("embedding_bag", *padding_idx, count);
}

// The checks on values, read on the host: only for CPU tensors outside a capture (header).
void check_values(const Tensor& indices, const Tensor& offsets, int64_t num_embeddings) {
  const bool readable = indices.device().is_cpu() && (!offsets.defined() || offsets.device().is_cpu());
  if (!readable || dispatch_mode_active()) return;
  const int64_t length = indices.size(0);
  if (offsets.defined() && offsets.numel() > 0) {
    const std::vector<int64_t> starts = offsets.to(kInt64).to_vector<int64_t>();
    check(starts[0] == 0,
          "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
          "position 0. However, got {} (offsets of shape {})",
          starts[0], offsets.sizes());
    for (size_t i = 1; i < starts.size(); ++i)
      check(starts[i] >= starts[i - 1], "embedding_bag: offsets must be non-decreasing, got offsets[{}] = {} after {}",
            i, starts[i], starts[i - 1]);
    check(starts.back() <= length,
          "embedding_bag: offsets[-1] can not be greater than input's length {}, but got offsets[-1] of {}", length,
          starts.back());
  }
  if (length == 0) return;
  const int64_t lowest = amin(indices).item<int64_t>();
  const int64_t highest = amax(indices).item<int64_t>();
  const int64_t bad = lowest < 0 ? lowest : highest;
  check(lowest >= 0 && highest < num_embeddings,
        "embedding_bag: Expected idx >= 0 && idx < num_embeddings ({}) but found idx to be {} (input of shape {})",
        num_embeddings, bad, indices.sizes());
}

Tensor index_add(const Tensor& self, const Tensor& index, const Tensor& source) {
  static const OpDef& op = lookup_op("index_add");
  return dispatch_one(op, {self, index, source}, {{"dim", int64_t{0}}});
}

// The bag of each index of the flat input [N], int64 in [0, bags]: bag `bags` is the sink.
Tensor bag_ids(const Tensor& input, const Tensor& flat, const Tensor& offsets, int64_t bags,
               std::optional<int64_t> padding) {
  const int64_t length = flat.size(0);
  const TensorOptions int64{.dtype = kInt64, .device = flat.device()};
  Tensor ids;
  if (input.dim() == 2) {
    ids = arange(static_cast<double>(bags), int64).unsqueeze(1).expand({bags, input.size(1)}).reshape({length});
  } else {
    // A one at every bag's start (several for empty bags), summed: the count of starts at or
    // before each position, less one. Offsets equal to N land in the extra slot and count for none.
    // Positions before offsets[0] (refused on the host, so only a capture or CUDA sees them) get
    // bag 0, as PyTorch's CUDA kernels start the first bag at 0 whatever offsets[0] says.
    const Tensor starts = offsets.to(kInt64);
    const Tensor marks = index_add(zeros({length + 1}, int64), starts, ones({starts.size(0)}, int64));
    ids = clamp(sub(cumsum(marks.slice(0, 0, length), 0), 1.0), 0.0, std::nullopt);
  }
  if (!padding) return ids;
  const Tensor at_padding =
      eq(flat, scalar_tensor(static_cast<double>(*padding), {.dtype = flat.dtype(), .device = flat.device()}));
  return ember::where(at_padding, scalar_tensor(static_cast<double>(bags), int64), ids);
}

// The number of indices of each bag, sink included: int64 [bags + 1].
Tensor bag_counts(const Tensor& ids, int64_t bags) {
  const TensorOptions int64{.dtype = kInt64, .device = ids.device()};
  return index_add(zeros({bags + 1}, int64), ids, ones({ids.size(0)}, int64));
}

Tensor bag_sums(const Tensor& weight, const Tensor& flat, const Tensor& ids, int64_t bags,
                const EmbeddingBagFuncOptions& options) {
  const bool narrow = weight.dtype() == kBFloat16 || weight.dtype() == kFloat16;
  const DType compute = narrow ? kFloat32 : weight.dtype();
  Tensor rows = embedding(weight, flat).to(compute);
  if (options.per_sample_weights.defined())
    rows = mul(rows, options.per_sample_weights.reshape({flat.size(0)}).to(compute).unsqueeze(1));
  Tensor result = index_add(zeros({bags + 1, weight.size(1)}, {.dtype = compute, .device = weight.device()}), ids, rows)
                      .slice(0, 0, bags);
  if (options.mode == EmbeddingBagMode::Mean) {
    const Tensor counts = bag_counts(ids, bags).slice(0, 0, bags);
    result = div(result, clamp(counts, 1.0, std::nullopt).to(compute).unsqueeze(1));
  }
  return result.to(weight.dtype());
}

// Per column, the indices ordered by bag, then value (descending), then position: two stable
// sorts. A bag's first entry in that order is its first maximum; the gradient reaches only it.
Tensor bag_maxima(const Tensor& weight, const Tensor& flat, const Tensor& ids, int64_t bags) {
  const int64_t length = flat.size(0);
  const int64_t dim = weight.size(1);
  const Tensor rows = embedding(weight, flat);
  const Tensor by_value = std::get<1>(sort(rows.detach(), 0, /*descending=*/true));
  const Tensor bag_by_value = index_select(ids, 0, by_value.reshape({length * dim})).reshape({length, dim});
  const Tensor order = gather(by_value, 0, std::get<1>(sort(bag_by_value, 0)));
  const Tensor counts = bag_counts(ids, bags).slice(0, 0, bags);
  // Where each bag's run starts in that order; an empty bag's start may be N, so it is clamped.
  const Tensor firsts = clamp(sub(cumsum(counts, 0), counts), std::nullopt, static_cast<double>(length - 1));
  const Tensor maxima = gather(rows, 0, index_select(order, 0, firsts));
  const Tensor nonempty = gt(counts, scalar_tensor(0.0, {.dtype = kInt64, .device = counts.device()})).unsqueeze(1);
  return ember::where(nonempty, maxima, scalar_tensor(0.0, {.dtype = weight.dtype(), .device = weight.device()}));
}

}  // namespace

Tensor embedding_bag(const Tensor& weight, const Tensor& input, const EmbeddingBagFuncOptions& options, Where where) {
  CallSiteScope site(where);
  check_arguments(weight, input, options);
  const std::optional<int64_t> padding = wrapped_padding(options.padding_idx, weight.size(0));
  const Tensor flat = input.reshape({input.numel()});
  const Tensor offsets = input.dim() == 1 ? options.offsets : Tensor{};
  check_values(flat, offsets, weight.size(0));
  if (options.max_norm) {
    Tensor table = weight;  // the same tensor: the renorm writes into the caller's weight
    embedding_renorm_(table, flat, *options.max_norm, options.norm_type);
  }
  const int64_t bags = input.dim() == 2 ? input.size(0) : offsets.size(0) - (options.include_last_offset ? 1 : 0);
  // No bag: [0, D], still a lookup of the table (so it has the table's history).
  if (bags == 0) return embedding(weight, flat.slice(0, 0, 0));
  const Tensor ids = bag_ids(input, flat, offsets, bags, padding);
  // With no index every bag is empty, zeros in every mode: the sum gives them.
  if (options.mode == EmbeddingBagMode::Max && flat.numel() > 0) return bag_maxima(weight, flat, ids, bags);
  return bag_sums(weight, flat, ids, bags, options);
}

}  // namespace functional
}  // namespace ember::nn
