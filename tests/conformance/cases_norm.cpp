// Conformance cases for layer_norm (outputs y, mean, rstd) and dropout (outputs y, mask).
// Dropout's random forward values are checked in cases_random.cpp; here its p = 0 and p = 1
// forms are checked exactly and its gradient against finite differences (seed and offset are
// attributes, so every call draws the same mask).
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_norm {
namespace {

using enum Layout;

// The leading dims of `x`, before the `normalized` trailing ones: the shape of mean and rstd.
Dims leading_dims(const RefTensor& x, const Dims& normalized) {
  Dims leading;
  for (int i = 0; i + normalized.size() < x.sizes.size(); ++i) leading.push_back(x.sizes[i]);
  return leading;
}

// mean and rstd are float32 for 16-bit inputs.
DType statistic_dtype(const RefTensor& x) { return *x.dtype == ember::kFloat64 ? ember::kFloat64 : ember::kFloat32; }

// Normalizes over the trailing dims named by normalized_shape; mean and rstd have the leading
// shape.
std::vector<RefTensor> layer_norm_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor& x = in[0];
  const Dims& normalized = attrs.get<Dims>("normalized_shape");
  const double eps = attrs.get<double>("eps");
  const int64_t width = normalized.product();
  const int64_t rows = width == 0 ? 0 : x.numel() / width;
  const Dims stat_sizes = leading_dims(x, normalized);
  RefTensor y = filled(x.sizes, 0.0);
  RefTensor mean = filled(stat_sizes, 0.0, statistic_dtype(x)), rstd = filled(stat_sizes, 0.0, statistic_dtype(x));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<double> row(x.values.begin() + r * width, x.values.begin() + (r + 1) * width);
    const double m = mean_of(row);
    double squares = 0.0;
    for (double value : row) squares += (value - m) * (value - m);
    const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(width) + eps);
    mean.values[r] = m;
    rstd.values[r] = inverse;
    for (int64_t j = 0; j < width; ++j) {
      double value = (row[j] - m) * inverse;
      if (in[1].defined) value *= in[1].values[j];
      if (in[2].defined) value += in[2].values[j];
      y.values[r * width + j] = value;
    }
  }
  return {y, mean, rstd};
}

// Inputs grad_y, x, mean, rstd, weight (optional): with x_hat = (x - mean) * rstd and
// g = grad_y * weight, per row grad_x = rstd * (g - mean(g) - x_hat * mean(g * x_hat)),
// grad_weight = sum over rows of grad_y * x_hat, grad_bias = sum over rows of grad_y.
std::vector<RefTensor> layer_norm_backward_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const RefTensor &grad_y = in[0], &x = in[1], &mean = in[2], &rstd = in[3], &weight = in[4];
  const Dims& normalized = attrs.get<Dims>("normalized_shape");
  const int64_t width = normalized.product();
  RefTensor grad_x = filled(x.sizes, 0.0), grad_w = filled(normalized, 0.0), grad_b = filled(normalized, 0.0);
  for (int64_t r = 0; r < mean.numel(); ++r) {
    std::vector<double> x_hat(width), g(width);
    double mean_g = 0.0, mean_g_x_hat = 0.0;
    for (int64_t j = 0; j < width; ++j) {
      const int64_t at = r * width + j;
      x_hat[j] = (x.values[at] - mean.values[r]) * rstd.values[r];
      g[j] = grad_y.values[at] * (weight.defined ? weight.values[j] : 1.0);
      mean_g += g[j] / static_cast<double>(width);
      mean_g_x_hat += g[j] * x_hat[j] / static_cast<double>(width);
    }
    for (int64_t j = 0; j < width; ++j) {
      const int64_t at = r * width + j;
      grad_x.values[at] = rstd.values[r] * (g[j] - mean_g - x_hat[j] * mean_g_x_hat);
      grad_w.values[j] += grad_y.values[at] * x_hat[j];
      grad_b.values[j] += grad_y.values[at];
    }
  }
  return {grad_x, grad_w, grad_b};
}

struct NormShape {
  const char* label;
  std::vector<InputSpec> inputs;
  Dims normalized;
  double eps = 1e-5;
  bool gradcheck = true;
};

std::vector<Case> norm_cases() {
  const Domain d = real();
  const Domain scale = real(0.5, 1.5);
  std::vector<Case> cases;
  const std::vector<NormShape> shapes = {
      {"[3,4] over [4] with weight and bias", {{{3, 4}, d}, {{4}, scale}, {{4}, d}}, {4}},
      {"[2,3,4] over [3,4]", {{{2, 3, 4}, d}, {{3, 4}, scale}, {{3, 4}, d}}, {3, 4}},
      {"[3,5] without weight and bias", {{{3, 5}, d}, undefined_input(), undefined_input()}, {5}},
      {"[3,5] weight only, eps 1e-3", {{{3, 5}, d}, {{5}, scale}, undefined_input()}, {5}, 1e-3},
      {"transposed [4,5], strided weight", {{{4, 5}, d, Transposed}, {{5}, scale, Strided}, {{5}, d}}, {5}},
      {"strided [2,3,4] over [4]", {{{2, 3, 4}, d, Strided}, {{4}, scale}, {{4}, d, Transposed}}, {4}},
      {"expanded [3,4]", {{{3, 4}, d, Expanded}, {{4}, scale}, {{4}, d}}, {4}},
      {"size-0 batch [0,4]", {{{0, 4}, d}, {{4}, scale}, {{4}, d}}, {4}},
      {"size-1 rows [3,1] over [1]", {{{3, 1}, d}, {{1}, scale}, {{1}, d}}, {1}},
      {"1-D [6] over [6]", {{{6}, d}, {{6}, scale}, {{6}, d}}, {6}},
      {"large [256,160] (parallel path)", {{{256, 160}, d}, {{160}, scale}, {{160}, d}}, {160}, 1e-5, false},
  };
  for (const NormShape& shape : shapes) {
    Case c{.op = "layer_norm", .label = shape.label, .inputs = shape.inputs,
           .attrs = {{"normalized_shape", shape.normalized}, {"eps", shape.eps}},
           .reference = layer_norm_reference,
           .float32 = {1e-4, 1e-5},
           .gradcheck = shape.gradcheck,
           .loss_outputs = 0b1};  // mean and rstd are statistics, not differentiated
    cases.push_back(with_half(c, 3e-2));
  }

  // layer_norm_backward takes mean and rstd as inputs (any values: the op must use them as given).
  struct BackwardShape {
    const char* label;
    Dims sizes;
    Dims normalized;
    bool weight = true;
    Layout layout = Layout::Contiguous;
  };
  const std::vector<BackwardShape> backward_shapes = {
      {"[3,4] over [4]", {3, 4}, {4}},
      {"[2,3,4] over [3,4] without weight", {2, 3, 4}, {3, 4}, false},
      {"transposed [4,5] over [5]", {4, 5}, {5}, true, Transposed},
      {"strided [2,3,4] over [4]", {2, 3, 4}, {4}, true, Strided},
      {"size-0 rows [0,4]", {0, 4}, {4}},
      {"1-D [6]", {6}, {6}},
      {"large [256,160] (parallel path)", {256, 160}, {160}},
  };
  for (const BackwardShape& shape : backward_shapes) {
    Dims leading;
    for (int i = 0; i + shape.normalized.size() < shape.sizes.size(); ++i) leading.push_back(shape.sizes[i]);
    const InputSpec weight = shape.weight ? InputSpec{shape.normalized, scale} : undefined_input();
    Case c{.op = "layer_norm_backward", .label = shape.label,
           .inputs = {{shape.sizes, d, shape.layout}, {shape.sizes, d, shape.layout},
                      {.sizes = leading, .domain = real(-0.5, 0.5), .statistic = true},
                      {.sizes = leading, .domain = positive(0.5, 2.0), .statistic = true}, weight},
           .attrs = {{"normalized_shape", shape.normalized}},
           .reference = layer_norm_backward_reference,
           .float32 = {1e-4, 1e-4}};
    cases.push_back(with_half(c, 5e-2));
  }

  // dropout with p = 0 keeps everything, p = 1 drops everything (and must not produce 0 * inf).
  for (double p : {0.0, 1.0}) {
    for (const Variant& variant : unary_variants(d)) {
      Case c{.op = "dropout", .label = variant.label + fmt::format(", p {}", p), .inputs = variant.inputs,
             .attrs = {{"p", p}, {"seed", int64_t{1234}}, {"offset", int64_t{0}}},
             .reference = [p](const std::vector<RefTensor>& in, const Attrs&) {
               return std::vector<RefTensor>{p == 0.0 ? in[0] : filled(in[0].sizes, 0.0)};
             },
             .gradcheck = variant.gradcheck,
             .loss_outputs = 0b1};
      cases.push_back(with_half(c, 1e-2));
    }
  }
  // p = 0.3: the forward is random (cases_random.cpp); the gradient must match finite differences.
  for (const Variant& variant : unary_variants(d)) {
    if (!variant.gradcheck) continue;
    Case c{.op = "dropout", .label = std::string(variant.label) + ", p 0.3", .inputs = variant.inputs,
           .attrs = {{"p", 0.3}, {"seed", int64_t{99}}, {"offset", int64_t{64}}},
           .loss_outputs = 0b1};
    cases.push_back(c);
  }
  return cases;
}

const CaseRegistration registration("norm", norm_cases);

TEST_CASE("conformance: layer_norm and dropout match float64 references and finite differences") {
  run_cases(norm_cases());
}

}  // namespace
}  // namespace conformance::cases_norm
