// nn::MultiheadAttention and the transformer stacks where a review against PyTorch's source found
// them different: float32 masks with other query dtypes, and the stacks' copies as deepcopy makes
// them. Each case says what PyTorch does and where that is written; expected values come from the
// float64 loop of multihead_attention_reference.h.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "multihead_attention_reference.h"
#include "numeric_check.h"
#include "runtime/nn/nn.h"
#include "runtime/random/generator.h"

namespace test_attention_pytorch_parity {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

nn::MultiheadAttention float64_attention(int64_t E, int64_t H) {
  manual_seed(77);
  nn::MultiheadAttention attention(E, H, {.dtype = kFloat64});
  NoGradGuard no_grad;  // nonzero biases, so the reference checks where they are added
  attention->in_proj_bias.copy_(random_tensor({3 * E}, 5));
  attention->out_proj->bias.copy_(random_tensor({E}, 6));
  return attention;
}

std::vector<double> bool_as_float(const Tensor& mask) {
  std::vector<double> values = values_of(mask);
  for (double& value : values) value = value != 0.0 ? -kInfinity : 0.0;
  return values;
}

}  // namespace

// PyTorch keeps a float mask's own dtype: _canonical_mask (torch/nn/functional.py) converts only a
// bool mask (to target_type, the query's dtype) and returns a float one unchanged, with at most a
// warning. Without weights the masks go to scaled_dot_product_attention, whose
// validate_sdpa_input (aten/src/ATen/native/transformers/sdp_utils_cpp.h) accepts a mask that is
// "bool or float or [of the] query dtype": a float32 mask with a float64, bfloat16 or float16
// query. With a key padding mask, multi_head_attention_forward merges the two by
// `attn_mask = attn_mask + key_padding_mask`, which promotes to the query's dtype, so even the path
// with weights (baddbmm) works. Transformer.generate_square_subsequent_mask gives float32 by
// default, so PyTorch's usual causal mask works with a float64 or bfloat16 model. ember refuses
// every float mask whose dtype is not the query's (canonical_mask in attention_forward.cpp), and
// docs/ARCHITECTURE.md's "PyTorch's product would fail on the mismatch further in" holds only for
// the path with weights and no padding mask.
TEST_CASE("PyTorch parity: a float32 mask works with a float64 or bfloat16 query where PyTorch's SDPA accepts it") {
  const int64_t L = 4, N = 2, E = 6, H = 2;
  const nn::MultiheadAttention attention = float64_attention(E, H);
  const Tensor x = random_tensor({L, N, E}, 3);
  const Tensor causal = nn::TransformerImpl::generate_square_subsequent_mask(L);  // float32, PyTorch's default
  REQUIRE(causal.dtype() == kFloat32);
  MhaReferenceInput in = reference_input(attention, x, x, x);
  in.mask = values_of(causal);
  const MhaReferenceOutput expected = mha_reference(in);

  // Without weights: scaled_dot_product_attention takes the float32 mask.
  Tensor output;
  CHECK_NOTHROW(output = std::get<0>(attention->forward(x, x, x, {.need_weights = false, .attn_mask = causal})));
  if (output.defined()) check_close(output, expected.output, 1e-12);

  // With a padding mask the merged mask is float64: both paths work in PyTorch.
  const Tensor padding = from_vector<bool>({false, false, false, true, false, false, false, false}, {N, L});
  in.padding = bool_as_float(padding);
  const MhaReferenceOutput padded = mha_reference(in);
  for (const bool need_weights : {true, false}) {
    INFO("need_weights ", need_weights);
    Tensor merged;
    CHECK_NOTHROW(merged = std::get<0>(attention->forward(
                      x, x, x, {.key_padding_mask = padding, .need_weights = need_weights, .attn_mask = causal})));
    if (merged.defined()) check_close(merged, padded.output, 1e-12);
  }
  // A float32 key padding mask alone is passed on as the float32 attn_mask of SDPA: accepted too.
  MhaReferenceInput padding_only = reference_input(attention, x, x, x);
  padding_only.padding = bool_as_float(padding);
  const Tensor float32_padding = masked_fill(zeros({N, L}), padding, -kInfinity);
  Tensor padded_output;
  CHECK_NOTHROW(padded_output = std::get<0>(
                    attention->forward(x, x, x, {.key_padding_mask = float32_padding, .need_weights = false})));
  if (padded_output.defined()) check_close(padded_output, mha_reference(padding_only).output, 1e-12);

  // A bfloat16 encoder layer with the float32 causal mask (the layer calls attention without
  // weights): PyTorch runs it; the values are those of the same mask in bfloat16 (0 and -inf are exact).
  manual_seed(78);
  const nn::TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16, .dropout = 0.0, .dtype = kBFloat16});
  const Tensor src = random_tensor({L, N, 8}, 4, kBFloat16);
  const Tensor reference = layer->forward(src, {.src_mask = causal.to(kBFloat16)});
  Tensor with_float32_mask;
  CHECK_NOTHROW(with_float32_mask = layer->forward(src, {.src_mask = causal}));
  if (with_float32_mask.defined()) check_close(with_float32_mask, values_of(reference), 0.0);
}

// PyTorch's TransformerEncoder and TransformerDecoder build their layers with _get_clones
// (torch/nn/modules/transformer.py): ModuleList([copy.deepcopy(module) for i in range(N)]). A
// deepcopy keeps every parameter's requires_grad (Parameter.__deepcopy__ in
// torch/nn/parameter.py: type(self)(self.data.clone(...), self.requires_grad)) and every
// submodule's own `training` attribute (the whole __dict__ is copied). ember's copies_of
// (transformer.cpp) builds fresh layers and loads only the values, then copies the top-level
// training flag: a frozen parameter of the layer given trains again in every copy, and a
// submodule switched to eval is back in training.
TEST_CASE(
    "PyTorch parity: the stacks' copies keep each parameter's requires_grad and each submodule's mode, as deepcopy") {
  manual_seed(79);
  const nn::TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16});
  layer->self_attn->in_proj_weight.requires_grad_(false);  // a frozen projection
  layer->norm1->weight.requires_grad_(false);
  layer->dropout1->eval();  // one submodule in eval, the layer itself in training
  const nn::TransformerEncoder encoder(layer, 2);
  for (int64_t i = 0; i < 2; ++i) {
    INFO("layer ", i);
    const auto copy = encoder->layers->at<nn::TransformerEncoderLayerImpl>(i);
    CHECK_FALSE(copy->self_attn->in_proj_weight.requires_grad());
    CHECK_FALSE(copy->norm1->weight.requires_grad());
    CHECK(copy->linear1->weight.requires_grad());
    CHECK(copy->is_training());
    CHECK_FALSE(copy->dropout1->is_training());
  }
}

// copy.deepcopy draws nothing from any generator: building a PyTorch stack leaves the random state
// as it was. ember's copies_of constructs each copy with the layer's stored options, generator
// included, so every copy redraws its initial values from that generator (docs/ARCHITECTURE.md
// admits the advance). The stored value is a raw Generator*: when the layer was built with a
// generator that has since gone out of scope (a helper that seeds a local Generator and returns the
// layer), building the stack reads a dead object. The check below is the observable part: the
// layer's generator must be untouched by the copies.
TEST_CASE("PyTorch parity: building a stack draws nothing from the layer's generator, as deepcopy") {
  Generator generator(123);
  const nn::TransformerEncoderLayer encoder_layer(8, 2, {.dim_feedforward = 16, .generator = &generator});
  const nn::TransformerDecoderLayer decoder_layer(8, 2, {.dim_feedforward = 16, .generator = &generator});
  const GeneratorState before = generator.get_state();
  const nn::TransformerEncoder encoder(encoder_layer, 3);
  const nn::TransformerDecoder decoder(decoder_layer, 2);
  CHECK(generator.get_state() == before);
}

}  // namespace test_attention_pytorch_parity
