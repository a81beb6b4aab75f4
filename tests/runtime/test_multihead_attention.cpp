// nn::MultiheadAttention (runtime/nn/modules/attention.h) against a float64 loop written from
// PyTorch's documentation (multihead_attention_reference.h): packed and separate projections,
// batch_first and unbatched inputs, bias_k / bias_v, add_zero_attn, bool and float masks of both
// ranks with a key padding mask, both paths (with weights and through
// scaled_dot_product_attention), the causal hint, gradients by finite differences, PyTorch's
// parameters and initialisation, dropout, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "error_of.h"
#include "multihead_attention_reference.h"
#include "numeric_check.h"
#include "runtime/nn/nn.h"

namespace test_multihead_attention {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

nn::MultiheadAttention make_attention(int64_t E, int64_t H, nn::MultiheadAttentionOptions options = {}) {
  manual_seed(2024);
  options.dtype = kFloat64;
  nn::MultiheadAttention attention(E, H, options);
  // Nonzero biases (PyTorch starts them at 0), so the reference checks where they are added.
  NoGradGuard no_grad;
  if (attention->in_proj_bias.defined()) attention->in_proj_bias.copy_(random_tensor({3 * E}, 7));
  if (attention->out_proj->bias.defined()) attention->out_proj->bias.copy_(random_tensor({E}, 8));
  return attention;
}

// A bool mask's float meaning: -inf where true.
std::vector<double> as_float_mask(const Tensor& mask) {
  std::vector<double> values = values_of(mask);
  for (double& value : values) value = value != 0.0 ? -kInfinity : 0.0;
  return values;
}

// The weights averaged over the heads: [N, H, L, S] -> [N, L, S].
std::vector<double> head_mean(const std::vector<double>& weights, int64_t N, int64_t H, int64_t L, int64_t S) {
  std::vector<double> mean(N * L * S, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L * S; ++i) mean[n * L * S + i] += weights[(n * H + h) * L * S + i] / H;
  return mean;
}

}  // namespace

TEST_CASE("MultiheadAttention: self-attention matches the float64 loop, with and without the weights") {
  const int64_t L = 5, N = 2, E = 8, H = 2;
  const nn::MultiheadAttention attention = make_attention(E, H);
  const Tensor x = random_tensor({L, N, E}, 11);
  const MhaReferenceOutput expected = mha_reference(reference_input(attention, x, x, x));
  const auto [output, weights] = attention(x, x, x);
  check_close(output, expected.output, 1e-12);
  CHECK(weights.sizes() == Dims{N, L, L});
  check_close(weights, head_mean(expected.weights, N, H, L, L), 1e-12);
  const auto [per_head, all_weights] = attention->forward(x, x, x, {.average_attn_weights = false});
  check_close(all_weights, expected.weights, 1e-12);
  const auto [fast, none] = attention->forward(x, x, x, {.need_weights = false});
  CHECK_FALSE(none.defined());
  check_close(fast, expected.output, 1e-12);
  // A copy of x (not the same tensor) takes the three-GEMM path: the same values.
  check_close(std::get<0>(attention(x, x.clone(), x)), expected.output, 1e-12);
}

TEST_CASE("MultiheadAttention: cross-attention with kdim, vdim, bias_k, bias_v, add_zero_attn and masks") {
  const int64_t L = 3, S = 4, N = 2, E = 6, H = 3;
  const nn::MultiheadAttention attention =
      make_attention(E, H, {.add_bias_kv = true, .add_zero_attn = true, .kdim = 5, .vdim = 7});
  CHECK_FALSE(attention->in_proj_weight.defined());
  const Tensor query = random_tensor({L, N, E}, 21), key = random_tensor({S, N, 5}, 22),
               value = random_tensor({S, N, 7}, 23);
  const Tensor mask =
      from_vector<bool>({false, true, false, false, false, false, true, true, true, false, false, true}, {L, S});
  const Tensor padding = from_vector<bool>({false, false, false, true, true, false, false, false}, {N, S});
  MhaReferenceInput in = reference_input(attention, query, key, value);
  in.mask = as_float_mask(mask), in.padding = as_float_mask(padding);
  const MhaReferenceOutput expected = mha_reference(in);
  CHECK(expected.keys == S + 2);
  const auto [output, weights] =
      attention->forward(query, key, value, {.key_padding_mask = padding, .attn_mask = mask});
  check_close(output, expected.output, 1e-12);
  check_close(weights, head_mean(expected.weights, N, H, L, S + 2), 1e-12);
  const auto [fast, none] =
      attention->forward(query, key, value, {.key_padding_mask = padding, .need_weights = false, .attn_mask = mask});
  check_close(fast, expected.output, 1e-12);

  // A float mask per head [N H, L, S] is added as given.
  const Tensor per_head = random_tensor({N * H, L, S}, 24);
  in = reference_input(attention, query, key, value);
  in.mask = values_of(per_head);
  const MhaReferenceOutput added = mha_reference(in);
  check_close(std::get<0>(attention->forward(query, key, value, {.attn_mask = per_head})), added.output, 1e-12);
  check_close(std::get<0>(attention->forward(query, key, value, {.need_weights = false, .attn_mask = per_head})),
              added.output, 1e-12);
}

TEST_CASE("MultiheadAttention: batch_first and unbatched inputs give the sequence-first results") {
  const int64_t L = 4, S = 3, N = 2, E = 4, H = 2;
  const nn::MultiheadAttention sequence_first = make_attention(E, H);
  const nn::MultiheadAttention batch_first = make_attention(E, H, {.batch_first = true});
  const Tensor query = random_tensor({L, N, E}, 31), key = random_tensor({S, N, E}, 32),
               value = random_tensor({S, N, E}, 33);
  const Tensor padding = from_vector<bool>({false, true, false, false, false, true}, {N, S});
  const auto [expected, expected_weights] = sequence_first->forward(query, key, value, {.key_padding_mask = padding});
  const auto [output, weights] = batch_first->forward(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1),
                                                      {.key_padding_mask = padding});
  CHECK(output.sizes() == Dims{N, L, E});
  check_close(output.transpose(0, 1), values_of(expected), 1e-14);
  check_close(weights, values_of(expected_weights), 1e-14);
  // One sequence: [L, E] in and out, weights [L, S], a [S] padding mask and a [H, L, S] mask.
  const Tensor one_mask = random_tensor({H, L, S}, 34);
  const auto [single, single_weights] =
      sequence_first->forward(query.select(1, 1), key.select(1, 1), value.select(1, 1),
                              {.key_padding_mask = padding.select(0, 1), .attn_mask = one_mask});
  const auto [batch_of_one, batch_weights] =
      sequence_first->forward(query.slice(1, 1, 2), key.slice(1, 1, 2), value.slice(1, 1, 2),
                              {.key_padding_mask = padding.slice(0, 1, 2), .attn_mask = one_mask});
  CHECK(single.sizes() == Dims{L, E});
  CHECK(single_weights.sizes() == Dims{L, S});
  check_close(single, values_of(batch_of_one), 1e-14);
  check_close(single_weights, values_of(batch_weights), 1e-14);
}

TEST_CASE("MultiheadAttention: the causal hint, fully masked rows and dropout") {
  const int64_t L = 4, N = 2, E = 4, H = 2;
  const nn::MultiheadAttention attention = make_attention(E, H, {.dropout = 0.5});
  attention->eval();
  const Tensor x = random_tensor({L, N, E}, 41);
  const Tensor causal = from_vector<bool>(
      {false, true, true, true, false, false, true, true, false, false, false, true, false, false, false, false},
      {L, L});
  const Tensor with_mask = std::get<0>(attention->forward(x, x, x, {.need_weights = false, .attn_mask = causal}));
  // Without a padding mask or weights the hint hands the masking to scaled_dot_product_attention.
  check_close(std::get<0>(attention->forward(x, x, x, {.need_weights = false, .attn_mask = causal, .is_causal = true})),
              values_of(with_mask), 1e-14);
  check_close(std::get<0>(attention->forward(x, x, x, {.attn_mask = causal, .is_causal = true})), values_of(with_mask),
              1e-14);
  CHECK_THROWS_WITH_AS(attention->forward(x, x, x, {.is_causal = true}),
                       doctest::Contains("need attn_mask if specifying the is_causal hint"), Error);

  // Every key of sequence 0 padded: the weights path gives NaN (PyTorch's plain softmax), the
  // scaled_dot_product_attention path zero attention (its safe softmax), so only out_proj's bias.
  const Tensor padding = from_vector<bool>({true, true, true, true, false, false, true, false}, {N, L});
  const auto [output, weights] = attention->forward(x, x, x, {.key_padding_mask = padding});
  CHECK(std::isnan(values_of(weights.select(0, 0))[0]));
  CHECK(std::isfinite(values_of(weights.select(0, 1))[0]));
  const Tensor safe = std::get<0>(attention->forward(x, x, x, {.key_padding_mask = padding, .need_weights = false}));
  check_close(safe.select(1, 0).select(0, 2), values_of(attention->out_proj->bias), 1e-14);
  check_close(safe.select(1, 1), values_of(output.select(1, 1)), 1e-12);

  // Dropout acts in training mode only.
  const Tensor eval_output = std::get<0>(attention(x, x, x));
  attention->train();
  manual_seed(5);
  const Tensor dropped = std::get<0>(attention(x, x, x));
  CHECK(values_of(dropped) != values_of(eval_output));
  manual_seed(5);
  check_close(std::get<0>(attention(x, x, x)), values_of(dropped), 0.0);
}

TEST_CASE("MultiheadAttention: gradients match finite differences for the inputs and every parameter") {
  const int64_t L = 3, S = 4, N = 2, E = 4, H = 2;
  const nn::MultiheadAttention attention = make_attention(E, H, {.add_bias_kv = true, .kdim = 3});
  const Tensor padding = from_vector<bool>({false, false, true, false, false, false, false, true}, {N, S});
  const Tensor mask = random_tensor({L, S}, 51);
  auto forward = [&](const std::vector<Tensor>& t) {
    auto& a = *attention;
    a.q_proj_weight = t[3], a.k_proj_weight = t[4], a.v_proj_weight = t[5], a.in_proj_bias = t[6];
    a.bias_k = t[7], a.bias_v = t[8], a.out_proj->weight = t[9], a.out_proj->bias = t[10];
    const auto [output, weights] = a.forward(t[0], t[1], t[2], {.key_padding_mask = padding, .attn_mask = mask});
    return cat({output.reshape({-1}), weights.reshape({-1})});
  };
  const auto& a = *attention;
  std::vector<Tensor> inputs{random_tensor({L, N, E}, 52), random_tensor({S, N, 3}, 53), random_tensor({S, N, E}, 54)};
  for (const Tensor& parameter : {a.q_proj_weight, a.k_proj_weight, a.v_proj_weight, a.in_proj_bias, a.bias_k, a.bias_v,
                                  a.out_proj->weight, a.out_proj->bias})
    inputs.push_back(parameter.detach().clone());
  gradcheck(forward, inputs);
}

TEST_CASE("MultiheadAttention: PyTorch's parameters, names and initialisation") {
  const int64_t E = 8;
  const nn::MultiheadAttention packed(E, 4, {.add_bias_kv = true});
  std::vector<std::string> names;
  for (const auto& [name, parameter] : packed->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight",
                                          "out_proj.bias"});
  CHECK(packed->in_proj_weight.sizes() == Dims{3 * E, E});
  CHECK(packed->bias_k.sizes() == Dims{1, 1, E});
  check_close(packed->in_proj_bias, std::vector<double>(3 * E, 0.0), 0.0);
  check_close(packed->out_proj->bias, std::vector<double>(E, 0.0), 0.0);
  // xavier_uniform_ over [3E, E]: U(-b, b) with b = sqrt(6 / (E + 3E)).
  const double bound = std::sqrt(6.0 / (4.0 * E));
  for (double w : values_of(packed->in_proj_weight)) CHECK(std::abs(w) <= bound);
  const nn::MultiheadAttention separate(E, 2, {.bias = false, .kdim = 3, .vdim = 5});
  names.clear();
  for (const auto& [name, parameter] : separate->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "out_proj.weight"});
  CHECK(separate->k_proj_weight.sizes() == Dims{E, 3});
  CHECK(separate->v_proj_weight.sizes() == Dims{E, 5});
  CHECK(separate->head_dim() == 4);
}

TEST_CASE("MultiheadAttention: bad arguments are refused by name") {
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention(6, 4),
                       doctest::Contains("embed_dim must be divisible by num_heads, got 6 and 4"), Error);
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention(0, 1), doctest::Contains("must be greater than 0"), Error);
  CHECK_THROWS_WITH_AS(nn::MultiheadAttention(4, 2, {.dropout = 1.5}),
                       doctest::Contains("dropout must be a probability"), Error);
  const nn::MultiheadAttention attention = make_attention(4, 2);
  const Tensor x = random_tensor({3, 2, 4}, 61);
  CHECK_THROWS_WITH_AS(attention(random_tensor({3, 2, 2, 4}, 62), x, x),
                       doctest::Contains("query should be unbatched 2D or batched 3D tensor but received 4-D"), Error);
  CHECK_THROWS_WITH_AS(attention(x, x.select(1, 0), x), doctest::Contains("expected key and value to be 3-D"), Error);
  CHECK_THROWS_WITH_AS(attention(random_tensor({3, 2, 6}, 63), x, x),
                       doctest::Contains("was expecting embedding dimension of 4, but got 6"), Error);
  CHECK_THROWS_WITH_AS(attention(x, x, random_tensor({2, 2, 4}, 64)),
                       doctest::Contains("key's sequence and batch dims"), Error);
  CHECK_THROWS_WITH_AS(attention->forward(x, x, x, {.attn_mask = random_tensor({3, 2}, 65)}),
                       doctest::Contains("the shape of the 2-D attn_mask is [3, 2], but should be [3, 3]"), Error);
  CHECK_THROWS_WITH_AS(attention->forward(x, x, x, {.attn_mask = random_tensor({2, 3, 3}, 66)}),
                       doctest::Contains("but should be [4, 3, 3]"), Error);
  CHECK_THROWS_WITH_AS(attention->forward(x, x, x, {.key_padding_mask = from_vector<bool>({true, false}, {1, 2})}),
                       doctest::Contains("expecting key_padding_mask shape of [2, 3], but got [1, 2]"), Error);
  CHECK_THROWS_WITH_AS(attention->forward(x, x, x, {.attn_mask = zeros({3, 3}, {.dtype = kInt64})}),
                       doctest::Contains("only bool and floating types of attn_mask are supported, got int64"), Error);
  // The caller's line is named.
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { attention(random_tensor({3, 2, 6}, 67), x, x); });
  CHECK(names_line(message, line));
}

}  // namespace test_multihead_attention
