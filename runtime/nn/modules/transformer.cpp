// nn::TransformerEncoder, nn::TransformerDecoder and nn::Transformer: stacks of copies of one
// layer and the encoder-decoder model, as PyTorch's (torch/nn/modules/transformer.py).
#include "runtime/nn/modules/transformer.h"

#include <limits>

#include "runtime/functional.h"
#include "runtime/functional_shape_ops.h"
#include "runtime/nn/init.h"
#include "runtime/random/generator.h"

namespace ember::nn {

namespace {

// A layer's options with the dtype and device its parameters have now (it may have been moved
// since it was built), and a generator of the copy's own: the initial values a copy draws are
// overwritten by the layer's, so they come from a local stream, leaving every other generator as
// it was (PyTorch's deepcopy draws nothing).
TransformerLayerOptions options_now(TransformerLayerOptions options, const Tensor& parameter, Generator& scratch) {
  options.dtype = parameter.dtype();
  options.device = parameter.device();
  options.generator = &scratch;
  return options;
}

// PyTorch's _get_clones: num_layers deep copies of `layer`: its values, each parameter's
// requires_grad and each submodule's training mode.
template <typename Layer, typename Impl>
ModuleList copies_of(const Layer& layer, int64_t num_layers, const char* stack) {
  check(!layer.is_empty(), "{}: the layer to copy is an empty holder", stack);
  check(num_layers >= 0, "{}: num_layers must be non-negative, got {}", stack, num_layers);
  const StateDict values = layer->state_dict();
  const auto parameters = layer->named_parameters();
  const auto modules = layer->named_modules();
  ModuleList layers;
  for (int64_t i = 0; i < num_layers; ++i) {
    Generator scratch;
    auto copy = std::make_shared<Impl>(layer->d_model(), layer->nhead(),
                                       options_now(layer->options(), layer->linear1->weight, scratch));
    copy->load_state_dict(values);
    auto copied_parameters = copy->named_parameters();
    for (const auto& [name, parameter] : parameters)
      copied_parameters.at(name).requires_grad_(parameter.requires_grad());
    // Pre-order: a module's train() reaches its children, which are set after it.
    auto copied_modules = copy->named_modules();
    for (const auto& [name, module] : modules) copied_modules.at(name)->train(module->is_training());
    layers->push_back(copy);
  }
  return layers;
}

}  // namespace

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers, LayerNorm norm,
                                               Where where)
    : Module("TransformerEncoder") {
  CallSiteScope site(where);
  layers = register_module("layers", copies_of<TransformerEncoderLayer, TransformerEncoderLayerImpl>(
                                         layer, num_layers, "TransformerEncoder"));
  if (!norm.is_empty()) this->norm = register_module("norm", std::move(norm));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const TransformerEncoderForwardOptions& options,
                                       Where where) {
  CallSiteScope site(where);
  Tensor output = src;
  for (size_t i = 0; i < layers->size(); ++i)
    output = layers->at<TransformerEncoderLayerImpl>(static_cast<int64_t>(i))->forward(output, options);
  return norm.is_empty() ? output : norm(output);
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers, LayerNorm norm,
                                               Where where)
    : Module("TransformerDecoder") {
  CallSiteScope site(where);
  layers = register_module("layers", copies_of<TransformerDecoderLayer, TransformerDecoderLayerImpl>(
                                         layer, num_layers, "TransformerDecoder"));
  if (!norm.is_empty()) this->norm = register_module("norm", std::move(norm));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory,
                                       const TransformerDecoderForwardOptions& options, Where where) {
  CallSiteScope site(where);
  Tensor output = tgt;
  for (size_t i = 0; i < layers->size(); ++i)
    output = layers->at<TransformerDecoderLayerImpl>(static_cast<int64_t>(i))->forward(output, memory, options);
  return norm.is_empty() ? output : norm(output);
}

TransformerImpl::TransformerImpl(int64_t d_model, int64_t nhead, TransformerOptions options, Where where)
    : Module("Transformer"), d_model_(d_model), nhead_(nhead), batch_first_(options.layer.batch_first) {
  CallSiteScope site(where);
  const TransformerLayerOptions& layer = options.layer;
  const LayerNormOptions norm_options{.eps = layer.layer_norm_eps, .dtype = layer.dtype, .device = layer.device};
  encoder =
      register_module("encoder", TransformerEncoder(TransformerEncoderLayer(d_model, nhead, layer),
                                                    options.num_encoder_layers, LayerNorm(d_model, norm_options)));
  decoder =
      register_module("decoder", TransformerDecoder(TransformerDecoderLayer(d_model, nhead, layer),
                                                    options.num_decoder_layers, LayerNorm(d_model, norm_options)));
  for (const Tensor& parameter : parameters())
    if (parameter.dim() > 1) init::xavier_uniform_(parameter, 1.0, layer.generator);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const TransformerForwardOptions& options,
                                Where where) {
  CallSiteScope site(where);
  check(src.defined() && tgt.defined(), "Transformer: src and tgt must be defined");
  // PyTorch's checks: one batch size (batched inputs) and d_model features.
  if (src.dim() == 3 && tgt.dim() == 3) {
    const int batch_dim = batch_first_ ? 0 : 1;
    check(src.size(batch_dim) == tgt.size(batch_dim),
          "Transformer: the batch number of src and tgt must be equal, got shapes {} and {}", src.sizes(), tgt.sizes());
  }
  check(src.dim() > 0 && tgt.dim() > 0 && src.size(-1) == d_model_ && tgt.size(-1) == d_model_,
        "Transformer: the feature number of src and tgt must be equal to d_model={}, got shapes {} and {}", d_model_,
        src.sizes(), tgt.sizes());
  const Tensor memory = encoder->forward(src, {.src_mask = options.src_mask,
                                               .src_key_padding_mask = options.src_key_padding_mask,
                                               .is_causal = options.src_is_causal});
  return decoder->forward(tgt, memory,
                          {.tgt_mask = options.tgt_mask,
                           .memory_mask = options.memory_mask,
                           .tgt_key_padding_mask = options.tgt_key_padding_mask,
                           .memory_key_padding_mask = options.memory_key_padding_mask,
                           .tgt_is_causal = options.tgt_is_causal,
                           .memory_is_causal = options.memory_is_causal});
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t size, TensorOptions options, Where where) {
  CallSiteScope site(where);
  check(size >= 0, "Transformer::generate_square_subsequent_mask: size must be non-negative, got {}", size);
  const Tensor filled = full({size, size}, -std::numeric_limits<double>::infinity(), options);
  return triu(filled, 1);
}

}  // namespace ember::nn
