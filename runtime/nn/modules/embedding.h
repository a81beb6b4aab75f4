// nn::Embedding: a lookup table of num_embeddings rows of embedding_dim values, initialised
// N(0, 1) like torch.nn.Embedding; forward(indices int64 [*]) -> [*, embedding_dim]. With a
// padding_idx that row starts as zeros and never receives a gradient. With max_norm, each forward
// first renorms in place (no grad) the rows it looks up whose norm_type-norm exceeds max_norm
// (F::embedding_renorm_), as torch.nn.Embedding does.
#pragma once

#include <optional>

#include "runtime/nn/holder.h"
#include "runtime/random/generator.h"

namespace ember::nn {

struct EmbeddingOptions {
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;    // empty: the default device
  Generator* generator = nullptr;  // initialisation draws; null: the device's default generator
  std::optional<int64_t> padding_idx = std::nullopt;  // negative counts from the end
  std::optional<double> max_norm = std::nullopt;
  double norm_type = 2.0;  // the p of the norm max_norm bounds
};

class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options = {},
                Where where = Where::current());
  Tensor forward(const Tensor& indices, Where where = Where::current());
  void reset_parameters(Generator* generator = nullptr);

  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  std::optional<int64_t> padding_idx() const { return padding_idx_; }  // in [0, num_embeddings)
  std::optional<double> max_norm() const { return max_norm_; }
  double norm_type() const { return norm_type_; }

  Tensor weight;  // [num_embeddings, embedding_dim]

 protected:
  std::string extra_repr() const override;

 private:
  int64_t num_embeddings_;
  int64_t embedding_dim_;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_;
};

class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Embedding(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options = {},
            Where where = Where::current())
      : ModuleHolder(std::make_shared<EmbeddingImpl>(num_embeddings, embedding_dim, options, where)) {}
};

}  // namespace ember::nn
