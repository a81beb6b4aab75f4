// layer_norm and layer_norm_backward: float64 loop references, PyTorch values, gradients by
// finite differences, 16-bit statistics, thread-count independence and error messages.
#include <doctest/doctest.h>

#include <cmath>

#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_norm {

using namespace ember;
using ember::testing::doubles;
using ember::testing::dtype_options;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

struct LayerNormReference {
  std::vector<double> y, mean, rstd;
};

// Plain two-pass layer norm over rows of n values (weight/bias empty = absent).
LayerNormReference reference_layer_norm(const std::vector<double>& x, int64_t n, const std::vector<double>& weight,
                                        const std::vector<double>& bias, double eps) {
  LayerNormReference result;
  const int64_t rows = n == 0 ? 0 : static_cast<int64_t>(x.size()) / n;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0;
    for (int64_t j = 0; j < n; ++j) mean += x[r * n + j];
    mean /= static_cast<double>(n);
    double variance = 0.0;
    for (int64_t j = 0; j < n; ++j) variance += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    variance /= static_cast<double>(n);
    const double rstd = 1.0 / std::sqrt(variance + eps);
    result.mean.push_back(mean);
    result.rstd.push_back(rstd);
    for (int64_t j = 0; j < n; ++j) {
      const double scale = weight.empty() ? 1.0 : weight[j];
      const double shift = bias.empty() ? 0.0 : bias[j];
      result.y.push_back((x[r * n + j] - mean) * rstd * scale + shift);
    }
  }
  return result;
}

// All three outputs of the op (the public function returns only y).
TensorList layer_norm_op(const Tensor& input, const Dims& normalized_shape, const Tensor& weight,
                         const Tensor& bias, double eps = 1e-5) {
  const std::array<Tensor, 3> inputs{input, weight, bias};
  const Attrs attrs{{"normalized_shape", normalized_shape}, {"eps", eps}};
  return dispatch(OpCall{lookup_op("layer_norm"), inputs, attrs});
}

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element ", i);
    CHECK(actual[i] == doctest::Approx(expected[i]).epsilon(tolerance));
  }
}

}  // namespace

TEST_CASE("layer_norm matches a float64 loop reference, with and without weight and bias") {
  const Tensor x = small_tensor({4, 3, 6}, 1);
  const Tensor weight = small_tensor({3, 6}, 2);
  const Tensor bias = small_tensor({3, 6}, 3);
  const LayerNormReference full =
      reference_layer_norm(values_of(x), 18, values_of(weight), values_of(bias), 1e-5);
  TensorList outputs = layer_norm_op(x, {3, 6}, weight, bias);
  CHECK(outputs[0].sizes() == Dims{4, 3, 6});
  CHECK(outputs[1].sizes() == Dims{4});
  CHECK(outputs[2].sizes() == Dims{4});
  check_close(values_of(outputs[0]), full.y, 1e-12);
  check_close(values_of(outputs[1]), full.mean, 1e-12);
  check_close(values_of(outputs[2]), full.rstd, 1e-12);

  const LayerNormReference plain = reference_layer_norm(values_of(x), 6, {}, {}, 1e-3);
  check_close(values_of(layer_norm(x, {6}, {}, {}, 1e-3)), plain.y, 1e-12);

  // float32 computes statistics in double: close to the float64 reference.
  const Tensor x32 = x.to(kFloat32);
  check_close(values_of(layer_norm(x32, {3, 6}, weight.to(kFloat32), bias.to(kFloat32))),
              reference_layer_norm(values_of(x32), 18, values_of(weight.to(kFloat32)),
                                   values_of(bias.to(kFloat32)), 1e-5).y,
              1e-5);
}

TEST_CASE("LayerNorm with bias = false has a weight and no bias, as PyTorch's") {
  nn::LayerNorm norm(Dims{4}, {.bias = false});
  CHECK(norm->named_parameters().keys() == std::vector<std::string>{"weight"});
  CHECK(norm->state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK_FALSE(norm->bias.defined());
  norm->weight.detach().copy_(doubles({0.5, -1.0, 2.0, 1.5}).to(kFloat32));
  const Tensor x = small_tensor({3, 4}, 81).to(kFloat32);
  const LayerNormReference expected = reference_layer_norm(values_of(x), 4, {0.5, -1.0, 2.0, 1.5}, {}, 1e-5);
  check_close(values_of(norm(x)), expected.y, 1e-5);
  // Without elementwise_affine the option changes nothing: neither parameter exists.
  CHECK(nn::LayerNorm(Dims{4}, {.elementwise_affine = false, .bias = false})->named_parameters().size() == 0);
  CHECK(nn::LayerNorm(Dims{4})->named_parameters().keys() == std::vector<std::string>{"weight", "bias"});
}

TEST_CASE("layer_norm reads non-contiguous inputs") {
  const Tensor base = small_tensor({7, 5}, 4);
  const Tensor strided = base.transpose(0, 1);  // [5, 7], not contiguous
  REQUIRE_FALSE(strided.is_contiguous());
  const Tensor weight = small_tensor({7}, 5);
  const LayerNormReference expected =
      reference_layer_norm(values_of(strided), 7, values_of(weight), {}, 1e-5);
  check_close(values_of(layer_norm(strided, {7}, weight)), expected.y, 1e-12);
}

TEST_CASE("layer_norm on size-0 and size-1 shapes") {
  // No rows: empty outputs.
  TensorList no_rows = layer_norm_op(small_tensor({0, 4}, 6), {4}, {}, {});
  CHECK(no_rows[0].sizes() == Dims{0, 4});
  CHECK(no_rows[1].sizes() == Dims{0});
  // Empty rows: mean 0, variance taken as 0 (PyTorch gives NaN for rstd here).
  TensorList empty_rows = layer_norm_op(small_tensor({3, 0}, 7), {0}, {}, {}, 0.25);
  CHECK(values_of(empty_rows[1]) == std::vector<double>{0, 0, 0});
  CHECK(values_of(empty_rows[2]) == std::vector<double>{2, 2, 2});
  // One element per row: x - mean = 0, so y is the bias.
  const Tensor bias = small_tensor({1}, 8);
  TensorList single = layer_norm_op(small_tensor({3, 1}, 9), {1}, small_tensor({1}, 10), bias, 0.25);
  const double b = values_of(bias)[0];
  CHECK(values_of(single[0]) == std::vector<double>{b, b, b});
  CHECK(values_of(single[2]) == std::vector<double>{2, 2, 2});
  // Normalizing the whole tensor: 0-d statistics.
  TensorList whole = layer_norm_op(small_tensor({2, 3}, 11), {2, 3}, {}, {});
  CHECK(whole[1].dim() == 0);
}

// Inputs and values computed once with PyTorch 1.13:
//   k = torch.arange(15, dtype=torch.float64)
//   x = (torch.sin(0.37*k + 0.1) * (1 + 0.05*k)).reshape(3,5).requires_grad_()
//   j = torch.arange(5, dtype=torch.float64)
//   w = (0.5 + 0.25*j).requires_grad_(); b = (0.1*j - 0.2).requires_grad_()
//   g = (torch.cos(0.29*k) - 0.2).reshape(3,5)
//   y, mean, rstd = torch.native_layer_norm(x, [5], w, b, 1e-5); y.backward(g)
TEST_CASE("layer_norm forward and backward match PyTorch") {
  std::vector<double> x_values, g_values, w_values, b_values;
  for (int k = 0; k < 15; ++k) {
    x_values.push_back(std::sin(0.37 * k + 0.1) * (1 + 0.05 * k));
    g_values.push_back(std::cos(0.29 * k) - 0.2);
  }
  for (int j = 0; j < 5; ++j) {
    w_values.push_back(0.5 + 0.25 * j);
    b_values.push_back(0.1 * j - 0.2);
  }
  for (DType dtype : {kFloat64, kFloat32}) {
    INFO(dtype_name(dtype));
    const double tolerance = dtype == kFloat64 ? 1e-12 : 2e-5;
    Tensor x = from_vector<double>(x_values, {3, 5}, dtype_options(dtype)).requires_grad_();
    Tensor w = from_vector<double>(w_values, {5}, dtype_options(dtype)).requires_grad_();
    Tensor b = from_vector<double>(b_values, {5}, dtype_options(dtype)).requires_grad_();
    TensorList outputs = layer_norm_op(x, {5}, w, b);
    check_close(values_of(outputs[0]),
                {-0.987742672815427, -0.5816780498907936, 0.2112222146616275, 1.1615638252882254,
                 1.9358742058895562, 0.3960353365278095, 0.5190380658338838, 0.18983327246791143,
                 -0.7030229283699765, -2.147304535909091, 0.7110202054993147, 0.04073159705931231,
                 -0.8045289620970955, -1.1130946519955405, -0.15201678507628025},
                tolerance);
    check_close(values_of(outputs[1]), {0.7340758051695354, 0.480785002239368, -1.3745839328584257}, tolerance);
    check_close(values_of(outputs[2]), {2.484042968651958, 1.7519768099060207, 3.98873028130251}, tolerance);
    outputs[0].backward(from_vector<double>(g_values, {3, 5}, dtype_options(dtype)));
    check_close(values_of(x.grad()),
                {-0.26208517025082856, 0.17675052577759787, 0.363243901907935, 0.17700396443748345,
                 -0.4549132218721884, 0.039846103078190254, -0.014463907369864248, -0.03315983767093833,
                 -0.018369026013915768, 0.026146667976528093, -0.00022524675232382663, 0.303437443598634,
                 0.27332472707271815, -0.03917743941746532, -0.5373594845015595},
                dtype == kFloat64 ? 1e-10 : 2e-4);
    check_close(values_of(w.grad()),
                {-3.4886876902223456, -1.015992716604437, 0.9321333282287518, 1.9229517048104556,
                 2.0819838175396947},
                tolerance);
    check_close(values_of(b.grad()),
                {-0.45045539578222393, -0.8089821656135983, -1.1500563647989979, -1.445194119897237,
                 -1.6697478132227455},
                tolerance);
  }
}

TEST_CASE("layer_norm gradients match finite differences") {
  SUBCASE("weight and bias, two normalized dims") {
    gradcheck_leaves([](const std::vector<Tensor>& in) { return layer_norm(in[0], {2, 3}, in[1], in[2]); },
              {leaf({4, 2, 3}, 20), leaf({2, 3}, 21), leaf({2, 3}, 22)});
  }
  SUBCASE("no weight or bias") {
    gradcheck_leaves([](const std::vector<Tensor>& in) { return layer_norm(in[0], {5}); }, {leaf({3, 5}, 23)});
  }
  SUBCASE("weight only, non-contiguous input") {
    gradcheck_leaves([](const std::vector<Tensor>& in) { return layer_norm(in[0].transpose(0, 1), {4}, in[1]); },
              {leaf({4, 3}, 24), leaf({4}, 25)});
  }
  SUBCASE("bias only, one row") {
    gradcheck_leaves([](const std::vector<Tensor>& in) { return layer_norm(in[0], {6}, {}, in[1]); },
              {leaf({6}, 26), leaf({6}, 27)});
  }
}

TEST_CASE("layer_norm on 16-bit inputs keeps float32 statistics") {
  const Tensor x = small_tensor({3, 8}, 30, kBFloat16);
  TensorList outputs = layer_norm_op(x, {8}, {}, {});
  CHECK(outputs[0].dtype() == kBFloat16);
  CHECK(outputs[1].dtype() == kFloat32);
  CHECK(outputs[2].dtype() == kFloat32);
  const LayerNormReference expected = reference_layer_norm(values_of(x), 8, {}, {}, 1e-5);
  check_close(values_of(outputs[1]), expected.mean, 1e-6);
  check_close(values_of(outputs[2]), expected.rstd, 1e-6);
  const std::vector<double> y = values_of(outputs[0]);
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == doctest::Approx(expected.y[i]).epsilon(1e-2));

  Tensor half = small_tensor({2, 4}, 31, kFloat16).requires_grad_();
  layer_norm(half, {4}).backward(small_tensor({2, 4}, 32, kFloat16));
  CHECK(half.grad().dtype() == kFloat16);
}

TEST_CASE("layer_norm backward does not depend on the thread count") {
  const Tensor x = small_tensor({2000, 64}, 40, kFloat32);
  const Tensor grad_y = small_tensor({2000, 64}, 41, kFloat32);
  auto gradients = [&](int threads) {
    set_num_threads(threads);
    Tensor input = x.clone().requires_grad_();
    Tensor weight = small_tensor({64}, 42, kFloat32).requires_grad_();
    Tensor bias = small_tensor({64}, 43, kFloat32).requires_grad_();
    layer_norm(input, {64}, weight, bias).backward(grad_y);
    return std::array<std::vector<float>, 3>{input.grad().to_vector<float>(), weight.grad().to_vector<float>(),
                                             bias.grad().to_vector<float>()};
  };
  const int threads = get_num_threads();
  const auto one = gradients(1);
  const auto two = gradients(2);
  set_num_threads(threads);
  CHECK(one[0] == two[0]);
  CHECK(one[1] == two[1]);
  CHECK(one[2] == two[2]);
  // The blocked grad_weight sum is still the plain column sum.
  const std::vector<double> dy = values_of(grad_y);
  double column_sum = 0.0;
  for (int r = 0; r < 2000; ++r) column_sum += dy[r * 64 + 5];
  CHECK(one[2][5] == doctest::Approx(column_sum).epsilon(1e-6));
}

TEST_CASE("layer_norm errors name the op and the shapes") {
  const Tensor x = small_tensor({2, 3}, 50);
  CHECK_THROWS_WITH_AS(layer_norm(x, {4}), doctest::Contains("layer_norm: normalized_shape [4] does not match the trailing dims of the input [2, 3]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {}), doctest::Contains("layer_norm: normalized_shape must have at least one dim"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {3}, small_tensor({2}, 51)),
                       doctest::Contains("layer_norm: weight has shape [2] but normalized_shape is [3]"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {3}, {}, small_tensor({3}, 52, kFloat32)),
                       doctest::Contains("layer_norm: bias has dtype float32 but the input has dtype float64"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(from_vector<int64_t>({1, 2, 3}, {3}, dtype_options(kInt64)), {3}),
                       doctest::Contains("layer_norm: expected a floating-point input, got int64"), Error);
  CHECK_THROWS_WITH_AS(layer_norm(x, {3}, {}, {}, -1.0), doctest::Contains("layer_norm: eps must be non-negative"), Error);
}

}  // namespace test_norm
