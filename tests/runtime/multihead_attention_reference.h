// A float64 loop of torch.nn.MultiheadAttention's forward, written from its documentation, for
// tests/runtime/test_multihead_attention.cpp: per sequence and head, the projections, bias_k /
// bias_v and the zero key appended, masked scaled scores, a softmax, the weighted values, the heads
// joined and projected out; and its input read from a module's parameters.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "numeric_check.h"
#include "runtime/nn/nn.h"

namespace ember::testing {

// Row-major arrays. Inputs are [L, N, E] / [S, N, kdim] / [S, N, vdim] (sequence first). Weights as
// PyTorch's: wq [E, E], wk [E, kdim], wv [E, vdim], wo [E, E]; biases [E] or empty; bias_k and
// bias_v [E] or empty. mask is [L, S] or [N H, L, S] with S the key length given (0 = attend,
// -inf = not; others are added), empty for none; padding is [N, S] (the same), empty for none.
struct MhaReferenceInput {
  int64_t L = 0, S = 0, N = 0, E = 0, H = 0, kdim = 0, vdim = 0;
  std::vector<double> query, key, value;
  std::vector<double> wq, wk, wv, bq, bk, bv, wo, bo;
  std::vector<double> bias_k, bias_v;
  bool add_zero_attn = false;
  std::vector<double> mask;
  std::vector<double> padding;
  bool safe_softmax = false;  // a row of nothing but -inf gives 0 (the SDPA path), else NaN
};

struct MhaReferenceOutput {
  std::vector<double> output;   // [L, N, E]
  std::vector<double> weights;  // [N, H, L, S'], S' = S + bias_k + zero attention
  int64_t keys = 0;             // S'
};

inline MhaReferenceOutput mha_reference(const MhaReferenceInput& in) {
  const int64_t D = in.E / in.H;
  const int64_t keys = in.S + (in.bias_k.empty() ? 0 : 1) + (in.add_zero_attn ? 1 : 0);
  const double minus_infinity = -std::numeric_limits<double>::infinity();
  auto project = [&](const std::vector<double>& x, int64_t row, int64_t n, int64_t count, int64_t features,
                     const std::vector<double>& w, const std::vector<double>& b, int64_t out) {
    double total = b.empty() ? 0.0 : b[out];
    for (int64_t f = 0; f < features; ++f) total += x[(row * in.N + n) * features + f] * w[out * features + f];
    return total;
  };
  MhaReferenceOutput result{std::vector<double>(in.L * in.N * in.E, 0.0),
                            std::vector<double>(in.N * in.H * in.L * keys, 0.0), keys};
  std::vector<double> joined(in.L * in.N * in.E, 0.0);  // heads' outputs, [L, N, E]
  for (int64_t n = 0; n < in.N; ++n) {
    for (int64_t h = 0; h < in.H; ++h) {
      // Keys and values of this head, [keys, D].
      std::vector<double> k(keys * D, 0.0), v(keys * D, 0.0);
      for (int64_t s = 0; s < keys; ++s)
        for (int64_t d = 0; d < D; ++d) {
          const int64_t out = h * D + d;
          if (s < in.S) {
            k[s * D + d] = project(in.key, s, n, in.S, in.kdim, in.wk, in.bk, out);
            v[s * D + d] = project(in.value, s, n, in.S, in.vdim, in.wv, in.bv, out);
          } else if (s == in.S && !in.bias_k.empty()) {
            k[s * D + d] = in.bias_k[out];
            v[s * D + d] = in.bias_v[out];
          }  // else the zero key and value
        }
      for (int64_t l = 0; l < in.L; ++l) {
        std::vector<double> q(D);
        for (int64_t d = 0; d < D; ++d) q[d] = project(in.query, l, n, in.L, in.E, in.wq, in.bq, h * D + d);
        std::vector<double> scores(keys);
        double largest = minus_infinity;
        for (int64_t s = 0; s < keys; ++s) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += q[d] * k[s * D + d];
          double score = dot / std::sqrt(static_cast<double>(D));
          if (s < in.S && !in.mask.empty()) {
            const bool per_head = static_cast<int64_t>(in.mask.size()) == in.N * in.H * in.L * in.S;
            score += in.mask[((per_head ? n * in.H + h : 0) * in.L + l) * in.S + s];
          }
          if (s < in.S && !in.padding.empty()) score += in.padding[n * in.S + s];
          scores[s] = score;
          largest = std::max(largest, score);
        }
        double total = 0.0;
        for (double& score : scores) total += (score = std::exp(score - largest));
        for (int64_t s = 0; s < keys; ++s) {
          const double weight = largest == minus_infinity
                                    ? (in.safe_softmax ? 0.0 : std::numeric_limits<double>::quiet_NaN())
                                    : scores[s] / total;
          result.weights[((n * in.H + h) * in.L + l) * keys + s] = weight;
          for (int64_t d = 0; d < D; ++d) joined[(l * in.N + n) * in.E + h * D + d] += weight * v[s * D + d];
        }
      }
    }
  }
  for (int64_t row = 0; row < in.L * in.N; ++row)
    for (int64_t out = 0; out < in.E; ++out) {
      double total = in.bo.empty() ? 0.0 : in.bo[out];
      for (int64_t e = 0; e < in.E; ++e) total += joined[row * in.E + e] * in.wo[out * in.E + e];
      result.output[row * in.E + out] = total;
    }
  return result;
}

// The reference's input from the module's parameters and [L, N, .] inputs.
inline MhaReferenceInput reference_input(const nn::MultiheadAttention& attention, const Tensor& query,
                                         const Tensor& key, const Tensor& value) {
  const auto& a = *attention;
  const int64_t E = a.embed_dim();
  MhaReferenceInput in{.L = query.size(0), .S = key.size(0), .N = query.size(1), .E = E, .H = a.num_heads(),
                       .kdim = key.size(2), .vdim = value.size(2)};
  in.query = values_of(query), in.key = values_of(key), in.value = values_of(value);
  if (a.in_proj_weight.defined()) {
    in.wq = values_of(a.in_proj_weight.slice(0, 0, E));
    in.wk = values_of(a.in_proj_weight.slice(0, E, 2 * E));
    in.wv = values_of(a.in_proj_weight.slice(0, 2 * E, 3 * E));
  } else {
    in.wq = values_of(a.q_proj_weight), in.wk = values_of(a.k_proj_weight), in.wv = values_of(a.v_proj_weight);
  }
  if (a.in_proj_bias.defined()) {
    in.bq = values_of(a.in_proj_bias.slice(0, 0, E));
    in.bk = values_of(a.in_proj_bias.slice(0, E, 2 * E));
    in.bv = values_of(a.in_proj_bias.slice(0, 2 * E, 3 * E));
  }
  in.wo = values_of(a.out_proj->weight);
  if (a.out_proj->bias.defined()) in.bo = values_of(a.out_proj->bias);
  if (a.bias_k.defined()) in.bias_k = values_of(a.bias_k), in.bias_v = values_of(a.bias_v);
  in.add_zero_attn = a.options().add_zero_attn;
  return in;
}

}  // namespace ember::testing
