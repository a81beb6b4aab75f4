// nn::EmbeddingBag: a table of num_embeddings rows of embedding_dim values, initialised N(0, 1)
// like torch.nn.EmbeddingBag, whose forward reduces bags of looked-up rows by sum, mean (the
// default) or max through F::embedding_bag (functional_embedding_bag.h, where the input forms,
// include_last_offset, padding_idx and per_sample_weights are described).
#pragma once

#include <optional>

#include "runtime/nn/functional_embedding_bag.h"
#include "runtime/nn/holder.h"
#include "runtime/random/generator.h"

namespace ember::nn {

// libtorch's EmbeddingBagOptions past (num_embeddings, embedding_dim), in its order; then the
// factory options, which PyTorch's constructor also takes last.
struct EmbeddingBagOptions {
  std::optional<double> max_norm = std::nullopt;  // renorm the rows a forward looks up, in place
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;  // refused by forward, as F::embedding_bag
  EmbeddingBagMode mode = EmbeddingBagMode::Mean;
  bool sparse = false;  // refused by forward, as F::embedding_bag
  // The table to train, [num_embeddings, embedding_dim]: the parameter shares its memory (as
  // PyTorch's Parameter(_weight)) and is not initialised; dtype, device and generator go unused.
  Tensor _weight = {};
  bool include_last_offset = false;
  std::optional<int64_t> padding_idx = std::nullopt;  // negative counts from the end
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  Generator* generator = nullptr;               // initialisation draws; null: the device's default generator
};

// libtorch's EmbeddingBagFromPretrainedOptions.
struct EmbeddingBagFromPretrainedOptions {
  bool freeze = true;  // the weight does not require grad
  std::optional<double> max_norm = std::nullopt;
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
  EmbeddingBagMode mode = EmbeddingBagMode::Mean;
  bool sparse = false;
  bool include_last_offset = false;
  std::optional<int64_t> padding_idx = std::nullopt;
};

class EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim, EmbeddingBagOptions options = {},
                   Where where = Where::current());
  // forward(input, offsets = {}, per_sample_weights = {}) as torch's, one overload per arity so
  // that each call names the caller's line.
  Tensor forward(const Tensor& input, Where where = Where::current());
  Tensor forward(const Tensor& input, const Tensor& offsets, Where where = Where::current());
  Tensor forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights,
                 Where where = Where::current());
  // N(0, 1), then the padding row zeroed (not called for a given _weight, as in PyTorch).
  void reset_parameters(Generator* generator = nullptr);

  int64_t num_embeddings() const { return num_embeddings_; }
  int64_t embedding_dim() const { return embedding_dim_; }
  // The options as given, except padding_idx in [0, num_embeddings) and _weight not kept.
  const EmbeddingBagOptions& options() const { return options_; }

  Tensor weight;  // [num_embeddings, embedding_dim]

 protected:
  std::string extra_repr() const override;

 private:
  int64_t num_embeddings_;
  int64_t embedding_dim_;
  EmbeddingBagOptions options_;
};

class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, EmbeddingBagOptions options = {},
               Where where = Where::current())
      : ModuleHolder(std::make_shared<EmbeddingBagImpl>(num_embeddings, embedding_dim, options, where)) {}

  // torch.nn.EmbeddingBag.from_pretrained: a module over `embeddings` [rows, cols] (shared, not
  // copied), whose weight requires grad unless `freeze`.
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {},
                                      Where where = Where::current());
};

}  // namespace ember::nn
