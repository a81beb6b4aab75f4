// torch.nn's transformer layers: TransformerEncoderLayer and TransformerDecoderLayer (attention,
// a feed-forward block, residual connections and layer norms, post-norm or pre-norm), the stacks
// TransformerEncoder and TransformerDecoder (num_layers copies of one layer, then an optional
// norm) and Transformer (an encoder and a decoder). They follow PyTorch's forward step by step
// (runtime/nn/modules/transformer_layers.cpp, transformer.cpp), without its inference fast path.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/nn/holder.h"
#include "runtime/nn/modules/attention.h"
#include "runtime/nn/modules/dropout.h"
#include "runtime/nn/modules/layer_norm.h"
#include "runtime/nn/modules/linear.h"
#include "runtime/nn/modules/module_list.h"

namespace ember::nn {

enum class TransformerActivation { ReLU, GELU };

// The arguments of the layers after d_model and nhead, PyTorch's defaults (its bias = false, which
// also drops the layer norms' biases, is not offered).
struct TransformerLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  TransformerActivation activation = TransformerActivation::ReLU;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;  // [N, L, E] instead of [L, N, E]
  bool norm_first = false;   // pre-norm: each block normalises its input, not its residual sum
  DType dtype = DType::Float32;
  std::optional<Device> device = std::nullopt;  // empty: the default device
  Generator* generator = nullptr;               // initialisation draws; null: the device's default
};

// Masks as MultiheadAttention takes them (bool true = not attended, or float added).
struct TransformerEncoderForwardOptions {
  Tensor src_mask = {};              // [L, L] or [N nhead, L, L]
  Tensor src_key_padding_mask = {};  // [N, L]
  bool is_causal = false;            // a hint that src_mask is the causal mask
};
struct TransformerDecoderForwardOptions {
  Tensor tgt_mask = {}, memory_mask = {};
  Tensor tgt_key_padding_mask = {}, memory_key_padding_mask = {};
  bool tgt_is_causal = false, memory_is_causal = false;
};

class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, TransformerLayerOptions options = {},
                              Where where = Where::current());
  // src [L, N, d_model] ([N, L, d_model] with batch_first; [L, d_model] unbatched) -> src's shape.
  Tensor forward(const Tensor& src, const TransformerEncoderForwardOptions& options = {},
                 Where where = Where::current());
  Tensor forward(const Tensor& src, Where where) { return forward(src, {}, where); }

  int64_t d_model() const { return d_model_; }
  int64_t nhead() const { return nhead_; }
  const TransformerLayerOptions& options() const { return options_; }

  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  int64_t d_model_, nhead_;
  TransformerLayerOptions options_;
};

class TransformerDecoderLayerImpl : public Module {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, TransformerLayerOptions options = {},
                              Where where = Where::current());
  // tgt [T, N, d_model], memory [S, N, d_model] (batch first / unbatched as the encoder's) -> tgt's shape.
  Tensor forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderForwardOptions& options = {},
                 Where where = Where::current());
  Tensor forward(const Tensor& tgt, const Tensor& memory, Where where) { return forward(tgt, memory, {}, where); }

  int64_t d_model() const { return d_model_; }
  int64_t nhead() const { return nhead_; }
  const TransformerLayerOptions& options() const { return options_; }

  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};

 private:
  int64_t d_model_, nhead_;
  TransformerLayerOptions options_;
};

class TransformerEncoderLayer : public ModuleHolder<TransformerEncoderLayerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  TransformerEncoderLayer(int64_t d_model, int64_t nhead, TransformerLayerOptions options = {},
                          Where where = Where::current())
      : ModuleHolder(std::make_shared<TransformerEncoderLayerImpl>(d_model, nhead, options, where)) {}
};
class TransformerDecoderLayer : public ModuleHolder<TransformerDecoderLayerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  TransformerDecoderLayer(int64_t d_model, int64_t nhead, TransformerLayerOptions options = {},
                          Where where = Where::current())
      : ModuleHolder(std::make_shared<TransformerDecoderLayerImpl>(d_model, nhead, options, where)) {}
};

// num_layers copies of `layer` (same starting parameters, as PyTorch's deepcopy; the layer given
// is not itself a member), applied in turn, then `norm` when given.
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers, LayerNorm norm = nullptr,
                         Where where = Where::current());
  Tensor forward(const Tensor& src, const TransformerEncoderForwardOptions& options = {},
                 Where where = Where::current());
  Tensor forward(const Tensor& src, Where where) { return forward(src, {}, where); }

  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
};

class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers, LayerNorm norm = nullptr,
                         Where where = Where::current());
  Tensor forward(const Tensor& tgt, const Tensor& memory, const TransformerDecoderForwardOptions& options = {},
                 Where where = Where::current());
  Tensor forward(const Tensor& tgt, const Tensor& memory, Where where) { return forward(tgt, memory, {}, where); }

  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
};

class TransformerEncoder : public ModuleHolder<TransformerEncoderImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers, LayerNorm norm = nullptr,
                     Where where = Where::current())
      : ModuleHolder(std::make_shared<TransformerEncoderImpl>(layer, num_layers, std::move(norm), where)) {}
};
class TransformerDecoder : public ModuleHolder<TransformerDecoderImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers, LayerNorm norm = nullptr,
                     Where where = Where::current())
      : ModuleHolder(std::make_shared<TransformerDecoderImpl>(layer, num_layers, std::move(norm), where)) {}
};

// torch.nn.Transformer's arguments after d_model and nhead.
struct TransformerOptions {
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  TransformerLayerOptions layer = {};  // dim_feedforward, dropout, activation, eps, batch_first, norm_first, ...
};
struct TransformerForwardOptions {
  Tensor src_mask = {}, tgt_mask = {}, memory_mask = {};
  Tensor src_key_padding_mask = {}, tgt_key_padding_mask = {}, memory_key_padding_mask = {};
  bool src_is_causal = false, tgt_is_causal = false, memory_is_causal = false;
};

// An encoder and a decoder of the layers above, each stack ending in a LayerNorm; every
// parameter of two or more dims is then redrawn by xavier_uniform_, as PyTorch's _reset_parameters.
class TransformerImpl : public Module {
 public:
  TransformerImpl(int64_t d_model = 512, int64_t nhead = 8, TransformerOptions options = {},
                  Where where = Where::current());
  // src [S, N, d_model], tgt [T, N, d_model] (batch first / unbatched likewise) -> tgt's shape.
  Tensor forward(const Tensor& src, const Tensor& tgt, const TransformerForwardOptions& options = {},
                 Where where = Where::current());
  Tensor forward(const Tensor& src, const Tensor& tgt, Where where) { return forward(src, tgt, {}, where); }

  // [size, size] float32: 0 on and below the diagonal, -inf above (PyTorch's static method).
  static Tensor generate_square_subsequent_mask(int64_t size, TensorOptions options = {},
                                                Where where = Where::current());

  int64_t d_model() const { return d_model_; }
  int64_t nhead() const { return nhead_; }

  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};

 private:
  int64_t d_model_, nhead_;
  bool batch_first_;
};

class Transformer : public ModuleHolder<TransformerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit Transformer(int64_t d_model = 512, int64_t nhead = 8, TransformerOptions options = {},
                       Where where = Where::current())
      : ModuleHolder(std::make_shared<TransformerImpl>(d_model, nhead, options, where)) {}
};

}  // namespace ember::nn
