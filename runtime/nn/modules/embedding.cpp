// nn::Embedding: the table parameter and forward through the embedding op.
#include "runtime/nn/modules/embedding.h"

#include "runtime/dispatch.h"
#include "runtime/embedding_padding.h"
#include "runtime/functional.h"
#include "runtime/nn/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options, Where where)
    : Module("Embedding"),
      num_embeddings_(num_embeddings),
      embedding_dim_(embedding_dim),
      max_norm_(options.max_norm),
      norm_type_(options.norm_type) {
  CallSiteScope site(where);
  // Zero rows or columns are allowed, as in PyTorch: an empty table (any index is then out of range).
  check(num_embeddings >= 0 && embedding_dim >= 0,
        "Embedding: sizes must be non-negative, got num_embeddings={} embedding_dim={}", num_embeddings,
        embedding_dim);
  if (options.padding_idx) padding_idx_ = wrap_padding_idx("Embedding", *options.padding_idx, num_embeddings);
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim},
                                              {.dtype = options.dtype, .device = options.device}));
  reset_parameters(options.generator);
}

// As torch.nn.Embedding: N(0, 1), then the padding row zeroed.
void EmbeddingImpl::reset_parameters(Generator* generator) {
  init::normal_(weight, 0.0, 1.0, generator);
  if (!padding_idx_) return;
  NoGradGuard no_grad;
  weight.slice(0, *padding_idx_, *padding_idx_ + 1).zero_();
}

Tensor EmbeddingImpl::forward(const Tensor& indices, Where where) {
  CallSiteScope site(where);
  if (max_norm_) functional::embedding_renorm_(weight, indices, *max_norm_, norm_type_);
  return embedding(weight, indices, padding_idx_);
}

// torch.nn.Embedding.extra_repr: the optional fields only where they differ from the defaults.
std::string EmbeddingImpl::extra_repr() const {
  std::string text = fmt::format("{}, {}", num_embeddings_, embedding_dim_);
  if (padding_idx_) text += fmt::format(", padding_idx={}", *padding_idx_);
  if (max_norm_) text += ", max_norm=" + python_float(*max_norm_);
  if (norm_type_ != 2.0) text += ", norm_type=" + python_float(norm_type_);
  return text;
}

}  // namespace ember::nn
