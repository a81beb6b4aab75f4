// The transformer layers (runtime/nn/modules/transformer.h) against float64 loops built on the
// multi-head attention reference (multihead_attention_reference.h) with layer norm, the
// feed-forward block and the residual sums written out; post-norm and pre-norm, relu and gelu,
// masks, batch_first, the stacks' copies, Transformer's initialisation and mask, gradients by
// finite differences, dropout, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "multihead_attention_reference.h"
#include "numeric_check.h"
#include "runtime/nn/nn.h"

namespace test_transformer {

using namespace ember;
using namespace ember::testing;

namespace {

using Values = std::vector<double>;

// [rows, out] of x [rows, in] W^T + b.
Values linear_reference(const Values& x, const nn::Linear& layer) {
  const Values w = values_of(layer->weight), b = values_of(layer->bias);
  const int64_t in = layer->in_features(), out = layer->out_features(), rows = static_cast<int64_t>(x.size()) / in;
  Values y(rows * out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double total = b[o];
      for (int64_t i = 0; i < in; ++i) total += x[r * in + i] * w[o * in + i];
      y[r * out + o] = total;
    }
  return y;
}

Values layer_norm_reference(const Values& x, const nn::LayerNorm& norm, int64_t features, double eps) {
  const Values w = values_of(norm->weight), b = values_of(norm->bias);
  Values y(x.size());
  for (size_t r = 0; r < x.size() / features; ++r) {
    double mean = 0.0, variance = 0.0;
    for (int64_t f = 0; f < features; ++f) mean += x[r * features + f] / features;
    for (int64_t f = 0; f < features; ++f) variance += std::pow(x[r * features + f] - mean, 2) / features;
    for (int64_t f = 0; f < features; ++f)
      y[r * features + f] = (x[r * features + f] - mean) / std::sqrt(variance + eps) * w[f] + b[f];
  }
  return y;
}

Values plus(const Values& a, const Values& b) {
  Values sum(a.size());
  for (size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
  return sum;
}

Values feed_forward_reference(const Values& x, const nn::Linear& linear1, const nn::Linear& linear2, bool gelu) {
  Values hidden = linear_reference(x, linear1);
  for (double& h : hidden) h = gelu ? 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0))) : std::max(h, 0.0);
  return linear_reference(hidden, linear2);
}

// Attention of x [L, N, E] over source [S, N, E] (eval mode: no dropout), with float masks.
Values attention_reference(const nn::MultiheadAttention& attention, const Tensor& x, const Tensor& source,
                           const Values& mask, const Values& padding) {
  MhaReferenceInput in = reference_input(attention, x, source, source);
  in.mask = mask, in.padding = padding, in.safe_softmax = true;
  return mha_reference(in).output;
}

Tensor like(const Values& values, const Tensor& shape) {
  return from_vector<double>(values, shape.sizes(), {.dtype = kFloat64});
}

Values encoder_layer_reference(const nn::TransformerEncoderLayer& layer, const Tensor& src, const Values& mask,
                               const Values& padding) {
  const auto& l = *layer;
  const int64_t E = l.d_model();
  const double eps = l.options().layer_norm_eps;
  const bool gelu = l.options().activation == nn::TransformerActivation::GELU;
  const Values x = values_of(src);
  if (l.options().norm_first) {
    const Values normed = layer_norm_reference(x, l.norm1, E, eps);
    const Values x1 = plus(x, attention_reference(l.self_attn, like(normed, src), like(normed, src), mask, padding));
    return plus(x1, feed_forward_reference(layer_norm_reference(x1, l.norm2, E, eps), l.linear1, l.linear2, gelu));
  }
  const Values x1 =
      layer_norm_reference(plus(x, attention_reference(l.self_attn, src, src, mask, padding)), l.norm1, E, eps);
  return layer_norm_reference(plus(x1, feed_forward_reference(x1, l.linear1, l.linear2, gelu)), l.norm2, E, eps);
}

Values decoder_layer_reference(const nn::TransformerDecoderLayer& layer, const Tensor& tgt, const Tensor& memory,
                               const Values& tgt_mask, const Values& memory_padding) {
  const auto& l = *layer;
  const int64_t E = l.d_model();
  const double eps = l.options().layer_norm_eps;
  const Values x = values_of(tgt);
  if (l.options().norm_first) {
    const Values n1 = layer_norm_reference(x, l.norm1, E, eps);
    const Values x1 = plus(x, attention_reference(l.self_attn, like(n1, tgt), like(n1, tgt), tgt_mask, {}));
    const Values n2 = layer_norm_reference(x1, l.norm2, E, eps);
    const Values x2 = plus(x1, attention_reference(l.multihead_attn, like(n2, tgt), memory, {}, memory_padding));
    return plus(x2, feed_forward_reference(layer_norm_reference(x2, l.norm3, E, eps), l.linear1, l.linear2, false));
  }
  const Values x1 =
      layer_norm_reference(plus(x, attention_reference(l.self_attn, tgt, tgt, tgt_mask, {})), l.norm1, E, eps);
  const Values x2 = layer_norm_reference(
      plus(x1, attention_reference(l.multihead_attn, like(x1, tgt), memory, {}, memory_padding)), l.norm2, E, eps);
  return layer_norm_reference(plus(x2, feed_forward_reference(x2, l.linear1, l.linear2, false)), l.norm3, E, eps);
}

Values as_float_mask(const Tensor& mask) {
  Values values = values_of(mask);
  for (double& value : values) value = value != 0.0 ? -std::numeric_limits<double>::infinity() : 0.0;
  return values;
}

// LayerNorm starts at weight 1 and bias 0, which would hide which norm a layer applies where:
// every norm parameter is redrawn.
void randomize_norms(const nn::Module& module) {
  NoGradGuard no_grad;
  uint32_t seed = 500;
  for (const auto& [name, parameter] : module.named_parameters())
    if (name.find("norm") != std::string::npos) Tensor(parameter).copy_(random_tensor(parameter.sizes(), seed++));
}

const nn::TransformerLayerOptions kFloat64Layer{.dim_feedforward = 12, .dropout = 0.2, .dtype = kFloat64};

}  // namespace

TEST_CASE("TransformerEncoderLayer matches the float64 loop post-norm and pre-norm, relu and gelu") {
  const int64_t L = 4, N = 2, E = 6;
  const Tensor src = random_tensor({L, N, E}, 101);
  const Tensor padding = from_vector<bool>({false, false, true, false, false, true, false, false}, {N, L});
  const Tensor mask = random_tensor({L, L}, 102);
  for (const bool norm_first : {false, true})
    for (const auto activation : {nn::TransformerActivation::ReLU, nn::TransformerActivation::GELU}) {
      INFO("norm_first ", norm_first, " gelu ", activation == nn::TransformerActivation::GELU);
      manual_seed(7);
      nn::TransformerLayerOptions options = kFloat64Layer;
      options.norm_first = norm_first, options.activation = activation;
      const nn::TransformerEncoderLayer layer(E, 3, options);
      randomize_norms(*layer);
      layer->eval();
      const Tensor output = layer->forward(src, {.src_mask = mask, .src_key_padding_mask = padding});
      check_close(output, encoder_layer_reference(layer, src, values_of(mask), as_float_mask(padding)), 1e-12);
    }
}

TEST_CASE("TransformerDecoderLayer matches the float64 loop with a causal target mask and memory padding") {
  const int64_t T = 3, S = 5, N = 2, E = 4;
  const Tensor tgt = random_tensor({T, N, E}, 111), memory = random_tensor({S, N, E}, 112);
  const Tensor causal = nn::TransformerImpl::generate_square_subsequent_mask(T, {.dtype = kFloat64});
  const Tensor memory_padding =
      from_vector<bool>({false, false, false, false, true, true, false, false, false, false}, {N, S});
  for (const bool norm_first : {false, true}) {
    INFO("norm_first ", norm_first);
    manual_seed(8);
    nn::TransformerLayerOptions options = kFloat64Layer;
    options.norm_first = norm_first;
    const nn::TransformerDecoderLayer layer(E, 2, options);
    randomize_norms(*layer);
    layer->eval();
    const Values expected =
        decoder_layer_reference(layer, tgt, memory, values_of(causal), as_float_mask(memory_padding));
    const nn::TransformerDecoderForwardOptions masks{.tgt_mask = causal, .memory_key_padding_mask = memory_padding};
    check_close(layer->forward(tgt, memory, masks), expected, 1e-12);
    // The causal hint gives the same values.
    check_close(layer->forward(tgt, memory,
                               {.tgt_mask = causal, .memory_key_padding_mask = memory_padding, .tgt_is_causal = true}),
                expected, 1e-12);
    gradcheck([&](const std::vector<Tensor>& t) { return layer->forward(t[0], t[1], masks); }, {tgt, memory});
  }
}

TEST_CASE("transformer layers: batch_first and unbatched inputs give the sequence-first results, and dropout trains") {
  const int64_t L = 3, N = 2, E = 4;
  manual_seed(9);
  const nn::TransformerEncoderLayer layer(E, 2, kFloat64Layer);
  nn::TransformerLayerOptions batch_first_options = kFloat64Layer;
  batch_first_options.batch_first = true;
  const nn::TransformerEncoderLayer batch_first(E, 2, batch_first_options);
  batch_first->load_state_dict(layer->state_dict());
  layer->eval(), batch_first->eval();
  const Tensor src = random_tensor({L, N, E}, 121);
  const Tensor expected = layer(src);
  check_close(batch_first(src.transpose(0, 1)).transpose(0, 1), values_of(expected), 1e-14);
  check_close(layer(src.select(1, 1)), values_of(expected.select(1, 1)), 1e-14);
  layer->train();
  manual_seed(10);
  const Tensor dropped = layer(src);
  CHECK(values_of(dropped) != values_of(expected));
  manual_seed(10);
  check_close(layer(src), values_of(dropped), 0.0);
}

TEST_CASE("TransformerEncoder and TransformerDecoder stack independent copies of one layer, then the norm") {
  const int64_t L = 3, N = 2, E = 4;
  manual_seed(11);
  const nn::TransformerEncoderLayer prototype(E, 2, kFloat64Layer);
  const nn::TransformerEncoder encoder(prototype, 2, nn::LayerNorm(E, {.dtype = kFloat64}));
  encoder->eval();
  CHECK(encoder->layers->size() == 2);
  CHECK(encoder->named_parameters().size() == 2 * prototype->named_parameters().size() + 2);
  const auto first = encoder->layers->at<nn::TransformerEncoderLayerImpl>(0);
  const auto second = encoder->layers->at<nn::TransformerEncoderLayerImpl>(1);
  for (const auto& [name, parameter] : prototype->named_parameters()) {
    INFO(name);
    check_close(first->named_parameters().at(name), values_of(parameter), 0.0);
    CHECK_FALSE(first->named_parameters().at(name).is_same(parameter));
  }
  const Tensor src = random_tensor({L, N, E}, 131);
  const Tensor mask = random_tensor({L, L}, 132);
  const Tensor through = encoder->norm(second->forward(first->forward(src, {.src_mask = mask}), {.src_mask = mask}));
  check_close(encoder->forward(src, {.src_mask = mask}), values_of(through), 0.0);
  // The copies are deep: changing one leaves the other and the prototype as they were.
  {
    NoGradGuard no_grad;
    first->linear1->weight.mul_(2.0);
  }
  check_close(second->linear1->weight, values_of(prototype->linear1->weight), 0.0);

  const nn::TransformerDecoderLayer decoder_layer(E, 2, kFloat64Layer);
  const nn::TransformerDecoder decoder(decoder_layer, 3);
  decoder->eval();
  CHECK(decoder->norm.is_empty());
  const Tensor memory = random_tensor({5, N, E}, 133);
  Tensor expected = src;
  for (int64_t i = 0; i < 3; ++i)
    expected = decoder->layers->at<nn::TransformerDecoderLayerImpl>(i)->forward(expected, memory);
  check_close(decoder(src, memory), values_of(expected), 0.0);
}

TEST_CASE("Transformer: encoder then decoder, xavier-drawn matrices, the subsequent mask, errors") {
  const int64_t E = 8;
  manual_seed(12);
  const nn::Transformer model(E, 2, {.num_encoder_layers = 2, .num_decoder_layers = 1, .layer = kFloat64Layer});
  model->eval();
  CHECK(model->encoder->layers->size() == 2);
  CHECK(model->decoder->layers->size() == 1);
  for (const auto& [name, parameter] : model->named_parameters()) {
    if (parameter.dim() < 2) continue;
    INFO(name);
    const double bound = std::sqrt(6.0 / static_cast<double>(parameter.size(0) + parameter.size(1)));
    for (double w : values_of(parameter)) CHECK(std::abs(w) <= bound);
  }
  const Tensor src = random_tensor({5, 2, E}, 141), tgt = random_tensor({3, 2, E}, 142);
  const Tensor causal = nn::TransformerImpl::generate_square_subsequent_mask(3, {.dtype = kFloat64});
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(values_of(causal) == std::vector<double>{0.0, -inf, -inf, 0.0, 0.0, -inf, 0.0, 0.0, 0.0});
  const Tensor memory = model->encoder(src);
  check_close(model->forward(src, tgt, {.tgt_mask = causal}),
              values_of(model->decoder->forward(tgt, memory, {.tgt_mask = causal})), 0.0);
  CHECK_THROWS_WITH_AS(model(src, random_tensor({3, 4, E}, 143)),
                       doctest::Contains("the batch number of src and tgt must be equal"), Error);
  CHECK_THROWS_WITH_AS(model(src, random_tensor({3, 2, 6}, 144)),
                       doctest::Contains("must be equal to d_model=8, got shapes [5, 2, 8] and [3, 2, 6]"), Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoderLayer(6, 4),
                       doctest::Contains("d_model must be a positive multiple of nhead"), Error);
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(4, 2, {.dropout = -0.1}),
                       doctest::Contains("TransformerDecoderLayer: dropout must be a probability"), Error);
  CHECK_THROWS_WITH_AS(nn::TransformerEncoder(nn::TransformerEncoderLayer(nullptr), 2),
                       doctest::Contains("the layer to copy is an empty holder"), Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { model(src, random_tensor({3, 2, 6}, 145)); });
  CHECK(names_line(message, line));
}

}  // namespace test_transformer
