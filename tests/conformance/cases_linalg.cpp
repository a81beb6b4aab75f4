// Conformance cases for matmul (1-D, 2-D and broadcast batched), mm, bmm and linear (also with
// its fused activation).
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/gemm_activation.h"
#include "reference.h"

namespace conformance::cases_linalg {

using ember::Activation;
namespace {

// PyTorch's matmul: 1-D operands get a dim prepended (left) or appended (right) that is removed
// from the result; leading batch dims broadcast.
RefTensor matmul_reference(const RefTensor& a, const RefTensor& b) {
  const bool vector_a = a.sizes.size() == 1;
  const bool vector_b = b.sizes.size() == 1;
  Dims sa = vector_a ? Dims{1, a.sizes[0]} : a.sizes;
  Dims sb = vector_b ? Dims{b.sizes[0], 1} : b.sizes;
  const int64_t m = sa[sa.size() - 2], k = sa[sa.size() - 1], n = sb[sb.size() - 1];
  Dims batch_a, batch_b;
  for (int i = 0; i + 2 < sa.size(); ++i) batch_a.push_back(sa[i]);
  for (int i = 0; i + 2 < sb.size(); ++i) batch_b.push_back(sb[i]);
  const Dims batch = broadcast(batch_a, batch_b);
  // Each operand viewed as [its batch..., rows*cols]: broadcast_at picks the matrix of a batch.
  auto matrix_start = [&](const Dims& own_batch, int64_t batch_flat, int64_t matrix_elements) {
    RefTensor positions{.sizes = own_batch, .values = {}};
    for (int64_t i = 0; i < own_batch.product(); ++i) positions.values.push_back(static_cast<double>(i));
    return static_cast<int64_t>(broadcast_at(positions, batch, batch_flat)) * matrix_elements;
  };
  Dims out_sizes = batch;
  if (!vector_a) out_sizes.push_back(m);
  if (!vector_b) out_sizes.push_back(n);
  RefTensor out = filled(out_sizes, 0.0);
  for (int64_t batch_index = 0; batch_index < batch.product(); ++batch_index) {
    const int64_t start_a = matrix_start(batch_a, batch_index, m * k);
    const int64_t start_b = matrix_start(batch_b, batch_index, k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double total = 0.0;
        for (int64_t p = 0; p < k; ++p) total += a.values[start_a + i * k + p] * b.values[start_b + p * n + j];
        out.values[(batch_index * m + i) * n + j] = total;
      }
  }
  return out;
}

// linear: input [*, in] times weight [out, in] transposed, plus bias [out] when defined.
std::vector<RefTensor> linear_reference(const std::vector<RefTensor>& in, const Attrs&) {
  const RefTensor& input = in[0];
  const RefTensor& weight = in[1];
  const int64_t features = weight.sizes[1], outputs = weight.sizes[0];
  Dims out_sizes = input.sizes;
  out_sizes[out_sizes.size() - 1] = outputs;
  RefTensor out = filled(out_sizes, 0.0);
  int64_t rows = 1;
  for (int i = 0; i + 1 < input.sizes.size(); ++i) rows *= input.sizes[i];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outputs; ++o) {
      double total = in[2].defined ? in[2].values[o] : 0.0;
      for (int64_t f = 0; f < features; ++f) total += input.values[r * features + f] * weight.values[o * features + f];
      out.values[r * outputs + o] = total;
    }
  return {out};
}

// relu, exact gelu x Phi(x), or PyTorch's tanh approximation, in float64.
double activation_reference(Activation activation, double x) {
  switch (activation) {
    case Activation::None: break;
    case Activation::Relu: return x < 0.0 ? 0.0 : x;
    case Activation::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

Case product_case(const char* op, const char* label, std::vector<InputSpec> inputs, bool gradcheck = true) {
  Case c{.op = op, .label = label, .inputs = std::move(inputs),
         .reference = [](const std::vector<RefTensor>& in, const Attrs&) {
           return std::vector<RefTensor>{matmul_reference(in[0], in[1])};
         },
         // GEMM blocks and reorders the k-sum; fp32 error grows with k (at most 96 here).
         .float32 = {1e-4, 1e-4},
         .gradcheck = gradcheck};
  return with_half(c, 3e-2);
}

std::vector<Case> linalg_cases() {
  using enum Layout;
  const Domain d = real();
  std::vector<Case> cases;
  const std::vector<std::pair<const char*, std::vector<InputSpec>>> matrix_pairs = {
      {"[3,4] @ [4,5]", {{{3, 4}, d}, {{4, 5}, d}}},
      {"transposed [3,4] @ transposed [4,5]", {{{3, 4}, d, Transposed}, {{4, 5}, d, Transposed}}},
      {"strided [3,4] @ [4,5]", {{{3, 4}, d, Strided}, {{4, 5}, d}}},
      {"expanded [3,4] @ [4,5]", {{{3, 4}, d, Expanded}, {{4, 5}, d}}},
      {"size-0 k [3,0] @ [0,5]", {{{3, 0}, d}, {{0, 5}, d}}},
      {"size-0 m [0,4] @ [4,5]", {{{0, 4}, d}, {{4, 5}, d}}},
      {"size-1 [1,1] @ [1,1]", {{{1, 1}, d}, {{1, 1}, d}}},
      {"[5,1] @ [1,3] (outer product)", {{{5, 1}, d}, {{1, 3}, d}}},
  };
  for (const auto& [label, inputs] : matrix_pairs) {
    cases.push_back(product_case("mm", label, inputs));
    cases.push_back(product_case("matmul", label, inputs));
  }
  cases.push_back(product_case("mm", "large [64,96] @ [96,80]", {{{64, 96}, d}, {{96, 80}, d}}, false));
  cases.push_back(product_case("matmul", "large [64,96] @ transposed [96,80]",
                               {{{64, 96}, d}, {{96, 80}, d, Transposed}}, false));

  const std::vector<std::pair<const char*, std::vector<InputSpec>>> matmul_only = {
      {"[4] @ [4] (dot, 0-d result)", {{{4}, d}, {{4}, d}}},
      {"[4] @ [4,5]", {{{4}, d}, {{4, 5}, d}}},
      {"[3,4] @ [4]", {{{3, 4}, d}, {{4}, d}}},
      {"batched [2,3,4] @ [4,5]", {{{2, 3, 4}, d}, {{4, 5}, d}}},
      {"broadcast batch [2,1,3,4] @ [3,4,2]", {{{2, 1, 3, 4}, d}, {{3, 4, 2}, d}}},
      {"[3,4] @ batched [2,4,5]", {{{3, 4}, d}, {{2, 4, 5}, d}}},
      {"batched transposed [2,3,4] @ strided [2,4,3]", {{{2, 3, 4}, d, Transposed}, {{2, 4, 3}, d, Strided}}},
      {"[4] @ batched [2,4,3]", {{{4}, d}, {{2, 4, 3}, d}}},
  };
  for (const auto& [label, inputs] : matmul_only) cases.push_back(product_case("matmul", label, inputs));

  const std::vector<std::pair<const char*, std::vector<InputSpec>>> batched_pairs = {
      {"[2,3,4] @ [2,4,5]", {{{2, 3, 4}, d}, {{2, 4, 5}, d}}},
      {"transposed [2,3,4] @ strided [2,4,5]", {{{2, 3, 4}, d, Transposed}, {{2, 4, 5}, d, Strided}}},
      {"expanded batch [3,3,4] @ [3,4,2]", {{{3, 3, 4}, d, Expanded}, {{3, 4, 2}, d}}},
      {"size-0 batch [0,3,4] @ [0,4,5]", {{{0, 3, 4}, d}, {{0, 4, 5}, d}}},
      {"size-0 k [2,3,0] @ [2,0,5]", {{{2, 3, 0}, d}, {{2, 0, 5}, d}}},
      {"size-1 [1,1,1] @ [1,1,1]", {{{1, 1, 1}, d}, {{1, 1, 1}, d}}},
  };
  for (const auto& [label, inputs] : batched_pairs) cases.push_back(product_case("bmm", label, inputs));
  cases.push_back(product_case("bmm", "large [4,32,48] @ [4,48,40]", {{{4, 32, 48}, d}, {{4, 48, 40}, d}}, false));

  struct LinearShape {
    const char* label;
    std::vector<InputSpec> inputs;
    bool gradcheck = true;
  };
  const std::vector<LinearShape> linear_shapes = {
      {"[3,4] with weight [5,4] and bias", {{{3, 4}, d}, {{5, 4}, d}, {{5}, d}}},
      {"[3,4] without bias", {{{3, 4}, d}, {{5, 4}, d}, undefined_input()}},
      {"batched [2,3,4] with bias", {{{2, 3, 4}, d}, {{5, 4}, d}, {{5}, d}}},
      {"1-D input [4]", {{{4}, d}, {{5, 4}, d}, {{5}, d}}},
      {"transposed weight, strided input", {{{3, 4}, d, Strided}, {{5, 4}, d, Transposed}, {{5}, d, Strided}}},
      {"expanded input rows", {{{3, 4}, d, Expanded}, {{5, 4}, d}, {{5}, d}}},
      {"size-0 batch [0,4]", {{{0, 4}, d}, {{5, 4}, d}, {{5}, d}}},
      {"size-0 features [3,0]", {{{3, 0}, d}, {{5, 0}, d}, {{5}, d}}},
      {"size-1 [1,1] weight [1,1]", {{{1, 1}, d}, {{1, 1}, d}, {{1}, d}}},
      {"large [64,96] weight [80,96]", {{{64, 96}, d}, {{80, 96}, d}, {{80}, d}}, false},
  };
  for (const LinearShape& shape : linear_shapes) {
    Case c{.op = "linear", .label = shape.label, .inputs = shape.inputs, .reference = linear_reference,
           .float32 = {1e-4, 1e-4}, .gradcheck = shape.gradcheck};
    cases.push_back(with_half(c, 3e-2));
  }
  // The fused activation (the compile stage's GEMM epilogue) on the shapes with bias, without
  // it and batched; gradients through the eager op's backward rule.
  const std::vector<std::pair<Activation, const char*>> activations = {
      {Activation::Relu, "relu"}, {Activation::Gelu, "gelu"}, {Activation::GeluTanh, "gelu_tanh"}};
  for (const auto& [activation, name] : activations) {
    for (size_t s = 0; s < 3; ++s) {
      Case c{.op = "linear", .label = std::string(linear_shapes[s].label) + ", activation " + name,
             .inputs = linear_shapes[s].inputs, .attrs = {{"activation", static_cast<int64_t>(activation)}},
             .reference = [activation](const std::vector<RefTensor>& in, const Attrs& attrs) {
               std::vector<RefTensor> out = linear_reference(in, attrs);
               for (double& value : out[0].values) value = activation_reference(activation, value);
               return out;
             },
             // cuBLASLt's tanh-GELU epilogue uses the GPU's fast tanh: 2e-3 absolute near |x| ~ 3.
             .float32 = {activation == Activation::GeluTanh ? 2e-3 : 1e-4, 1e-4}};
      cases.push_back(with_half(c, 3e-2));
    }
  }
  return cases;
}

const CaseRegistration registration("linalg", linalg_cases);

TEST_CASE("conformance: matmul, mm, bmm and linear match float64 references and finite differences") {
  run_cases(linalg_cases());
}

}  // namespace
}  // namespace conformance::cases_linalg
