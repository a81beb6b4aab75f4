// F.embedding with max_norm: the in-place renorm of the rows looked up, then the lookup.
#include "runtime/dispatch.h"
#include "runtime/embedding_padding.h"
#include "runtime/nn/functional.h"

namespace ember::nn::functional {

Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type, Where where) {
  CallSiteScope site(where);
  check(weight.dim() == 2, "embedding_renorm_: weight must be 2-D [num_embeddings, embedding_dim], got shape {}",
        weight.sizes());
  NoGradGuard no_grad;
  // The indices are checked by a lookup into a zero-width view of the table: embedding's own
  // dtype and range errors, before anything is written.
  embedding(weight.slice(1, 0, 0), indices);
  // Which rows are looked up: embedding's gradient op scatter-adds a one per index into its row.
  Dims one_per_index = indices.sizes();
  one_per_index.push_back(1);
  static const OpDef& scatter_rows = lookup_op("embedding_backward");
  const Tensor counts = dispatch_one(scatter_rows, {ones(one_per_index, {.device = weight.device()}), indices},
                                     {{"num_weights", weight.size(0)}});
  const TensorOptions float64{.dtype = kFloat64, .device = weight.device()};
  const Tensor looked_up = gt(counts, zeros({}, {.device = weight.device()}));  // [V, 1]
  // PyTorch reads each row's norm into a double and divides there: so do these float64 tensors.
  const Tensor norms = norm(weight, norm_type, {1}, /*keepdim=*/true).to(kFloat64);
  const Tensor limit = scalar_tensor(max_norm, float64);
  const Tensor one = scalar_tensor(1.0, float64);
  const Tensor scale = ember::where(gt(norms, limit), limit / (norms + 1e-7), one);
  // Rows left alone are multiplied by exactly 1, which changes no value (NaN and -0 included).
  weight.mul_(ember::where(looked_up, scale, one).to(weight.dtype()));
  return weight;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, const EmbeddingFuncOptions& options, Where where) {
  CallSiteScope site(where);
  if (options.max_norm) {
    // As F.embedding, padding_idx is checked before the renorm writes: a refused call changes nothing.
    if (options.padding_idx) wrap_padding_idx("embedding", *options.padding_idx, weight.dim() > 0 ? weight.size(0) : 0);
    Tensor table = weight;  // the same tensor: the renorm writes into the caller's weight
    embedding_renorm_(table, indices, *options.max_norm, options.norm_type);
  }
  return ember::embedding(weight, indices, options.padding_idx);
}

}  // namespace ember::nn::functional
