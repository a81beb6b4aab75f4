// nn::EmbeddingBag: the table parameter (new or given), forward through F::embedding_bag, and
// torch's repr.
#include "runtime/nn/modules/embedding_bag.h"

#include "runtime/dispatch.h"
#include "runtime/embedding_padding.h"
#include "runtime/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/python_repr.h"

namespace ember::nn {

EmbeddingBagImpl::EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim, EmbeddingBagOptions options,
                                   Where where)
    : Module("EmbeddingBag"), num_embeddings_(num_embeddings), embedding_dim_(embedding_dim), options_(options) {
  CallSiteScope site(where);
  check(num_embeddings >= 0 && embedding_dim >= 0,
        "EmbeddingBag: sizes must be non-negative, got num_embeddings={} embedding_dim={}", num_embeddings,
        embedding_dim);
  if (options.padding_idx)
    options_.padding_idx = wrap_padding_idx("EmbeddingBag", *options.padding_idx, num_embeddings);
  options_._weight = Tensor{};  // the parameter holds it; the options need not keep the caller's handle
  if (options._weight.defined()) {
    const Dims expected{num_embeddings, embedding_dim};
    check(options._weight.sizes() == expected,
          "EmbeddingBag: Shape of weight does not match num_embeddings and embedding_dim: _weight has shape {}, "
          "expected {}",
          options._weight.sizes(), expected);
    // An alias without history, as Parameter(_weight): it shares the memory, not the autograd state.
    weight = register_parameter("weight", options._weight.detach());
    return;
  }
  weight = register_parameter(
      "weight", empty({num_embeddings, embedding_dim}, {.dtype = options.dtype, .device = options.device}));
  reset_parameters(options.generator);
}

void EmbeddingBagImpl::reset_parameters(Generator* generator) {
  init::normal_(weight, 0.0, 1.0, generator);
  if (!options_.padding_idx) return;
  NoGradGuard no_grad;
  weight.slice(0, *options_.padding_idx, *options_.padding_idx + 1).zero_();
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, Where where) { return forward(input, Tensor{}, Tensor{}, where); }

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, Where where) {
  return forward(input, offsets, Tensor{}, where);
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights,
                                 Where where) {
  return functional::embedding_bag(weight, input,
                                   {.offsets = offsets,
                                    .max_norm = options_.max_norm,
                                    .norm_type = options_.norm_type,
                                    .scale_grad_by_freq = options_.scale_grad_by_freq,
                                    .mode = options_.mode,
                                    .sparse = options_.sparse,
                                    .per_sample_weights = per_sample_weights,
                                    .include_last_offset = options_.include_last_offset,
                                    .padding_idx = options_.padding_idx},
                                   where);
}

// torch.nn.EmbeddingBag.extra_repr, whose values are Python reprs: the mode always, quoted; the
// other options only where they differ from the defaults.
std::string EmbeddingBagImpl::extra_repr() const {
  std::string text = fmt::format("{}, {}", num_embeddings_, embedding_dim_);
  if (options_.max_norm) text += ", max_norm=" + python_float(*options_.max_norm);
  if (options_.norm_type != 2.0) text += ", norm_type=" + python_float(options_.norm_type);
  if (options_.scale_grad_by_freq) text += ", scale_grad_by_freq=True";
  text += fmt::format(", mode='{}'", embedding_bag_mode_name(options_.mode));
  if (options_.padding_idx) text += fmt::format(", padding_idx={}", *options_.padding_idx);
  return text;
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options,
                                           Where where) {
  CallSiteScope site(where);
  check(embeddings.defined() && embeddings.dim() == 2,
        "EmbeddingBag::from_pretrained: Embeddings parameter is expected to be 2-dimensional, got {}",
        embeddings.defined() ? fmt::format("shape {}", embeddings.sizes()) : std::string("an undefined tensor"));
  EmbeddingBag bag(embeddings.size(0), embeddings.size(1),
                   {.max_norm = options.max_norm,
                    .norm_type = options.norm_type,
                    .scale_grad_by_freq = options.scale_grad_by_freq,
                    .mode = options.mode,
                    .sparse = options.sparse,
                    ._weight = embeddings,
                    .include_last_offset = options.include_last_offset,
                    .padding_idx = options.padding_idx},
                   where);
  bag->weight.requires_grad_(!options.freeze);
  return bag;
}

}  // namespace ember::nn
