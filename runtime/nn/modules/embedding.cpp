// nn::Embedding: the table parameter and forward through the embedding op.
#include "runtime/nn/modules/embedding.h"

#include "runtime/functional.h"
#include "runtime/nn/init.h"

namespace ember::nn {

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options, Where where)
    : Module("Embedding"), num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
  CallSiteScope site(where);
  // Zero rows or columns are allowed, as in PyTorch: an empty table (any index is then out of range).
  check(num_embeddings >= 0 && embedding_dim >= 0,
        "Embedding: sizes must be non-negative, got num_embeddings={} embedding_dim={}", num_embeddings,
        embedding_dim);
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim},
                                              {.dtype = options.dtype, .device = options.device}));
  reset_parameters(options.generator);
}

void EmbeddingImpl::reset_parameters(Generator* generator) { init::normal_(weight, 0.0, 1.0, generator); }

Tensor EmbeddingImpl::forward(const Tensor& indices, Where where) { return embedding(weight, indices, where); }

std::string EmbeddingImpl::extra_repr() const { return fmt::format("{}, {}", num_embeddings_, embedding_dim_); }

}  // namespace ember::nn
