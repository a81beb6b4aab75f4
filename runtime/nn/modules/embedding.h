// nn::Embedding: a lookup table of num_embeddings rows of embedding_dim values, initialised
// N(0, 1) like torch.nn.Embedding; forward(indices int64 [*]) -> [*, embedding_dim]. With a
// padding_idx that row starts as zeros and never receives a gradient.
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

  Tensor weight;  // [num_embeddings, embedding_dim]

 protected:
  std::string extra_repr() const override;

 private:
  int64_t num_embeddings_;
  int64_t embedding_dim_;
  std::optional<int64_t> padding_idx_;
};

class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Embedding(int64_t num_embeddings, int64_t embedding_dim, EmbeddingOptions options = {},
            Where where = Where::current())
      : ModuleHolder(std::make_shared<EmbeddingImpl>(num_embeddings, embedding_dim, options, where)) {}
};

}  // namespace ember::nn
