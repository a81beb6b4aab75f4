// The padding layers, Bilinear and F::bilinear, and init::trunc_normal_: float64 references
// computed here by loops and closed forms, finite-difference gradients, reprs, state_dict keys and
// every error (instance norm and the dropouts: test_nn_layers_more.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <set>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "nn_layers_checks.h"
#include "runtime/ember.h"

namespace test_nn_padding_bilinear_init {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;
using ember::testing::nn_layers::check_close;
using ember::testing::nn_layers::keys_of;
namespace F = ember::nn::functional;

namespace {

// ---- padding: out[..., i_1, ..., i_k] = in[..., source(i_1), ..., source(i_k)] over the last k dims ----
// `padding` as F.pad's: (before, after) for the last dim first.
std::vector<double> pad_reference(const Tensor& input, const std::vector<int64_t>& padding, PadMode mode,
                                  double value) {
  const std::vector<double> x = values_of(input);
  const Dims in_sizes = input.sizes();
  const int padded = static_cast<int>(padding.size()) / 2;
  Dims out_sizes = in_sizes;
  for (int k = 0; k < padded; ++k) out_sizes[in_sizes.size() - 1 - k] += padding[2 * k] + padding[2 * k + 1];
  std::vector<double> y(static_cast<size_t>(out_sizes.product()));
  for (int64_t flat = 0; flat < static_cast<int64_t>(y.size()); ++flat) {
    int64_t rest = flat, source = 0, stride = 1;
    bool outside = false;
    for (int d = in_sizes.size() - 1; d >= 0; --d) {
      int64_t index = rest % out_sizes[d];
      rest /= out_sizes[d];
      const int k = static_cast<int>(in_sizes.size()) - 1 - d;
      if (k < padded) {
        const int64_t size = in_sizes[d];
        index -= padding[2 * k];
        if (index < 0 || index >= size) {
          if (mode == PadMode::Constant) outside = true;
          if (mode == PadMode::Reflect) index = index < 0 ? -index : 2 * (size - 1) - index;
          if (mode == PadMode::Replicate) index = std::clamp<int64_t>(index, 0, size - 1);
          if (mode == PadMode::Circular) index = ((index % size) + size) % size;
        }
      }
      source += index * stride;
      stride *= in_sizes[d];
    }
    y[flat] = outside ? value : x[source];
  }
  return y;
}

TEST_CASE("padding layers match a direct loop in every mode and 1, 2, 3 padded dims, int and tuple forms") {
  const Tensor line = small_tensor({2, 3, 5}, 81);
  const Tensor image = small_tensor({2, 3, 4, 5}, 82);
  const Tensor volume = small_tensor({1, 2, 3, 4, 5}, 83);
  const std::vector<int64_t> pad1{1, 3}, pad2{1, 2, 2, 0}, pad3{2, 1, 0, 3, 1, 1};
  check_close(values_of(nn::ZeroPad1d(pad1)->forward(line)), pad_reference(line, pad1, PadMode::Constant, 0.0));
  check_close(values_of(nn::ZeroPad2d(pad2)->forward(image)), pad_reference(image, pad2, PadMode::Constant, 0.0));
  check_close(values_of(nn::ZeroPad3d(pad3)->forward(volume)), pad_reference(volume, pad3, PadMode::Constant, 0.0));
  check_close(values_of(nn::ConstantPad1d(pad1, 3.5)->forward(line)),
              pad_reference(line, pad1, PadMode::Constant, 3.5));
  check_close(values_of(nn::ConstantPad2d(pad2, -2.0)->forward(image)),
              pad_reference(image, pad2, PadMode::Constant, -2.0));
  check_close(values_of(nn::ConstantPad3d(pad3, 0.5)->forward(volume)),
              pad_reference(volume, pad3, PadMode::Constant, 0.5));
  check_close(values_of(nn::ReflectionPad1d(pad1)->forward(line)), pad_reference(line, pad1, PadMode::Reflect, 0));
  check_close(values_of(nn::ReflectionPad2d(pad2)->forward(image)), pad_reference(image, pad2, PadMode::Reflect, 0));
  check_close(values_of(nn::ReflectionPad3d(pad3)->forward(volume)), pad_reference(volume, pad3, PadMode::Reflect, 0));
  check_close(values_of(nn::ReplicationPad1d(pad1)->forward(line)), pad_reference(line, pad1, PadMode::Replicate, 0));
  check_close(values_of(nn::ReplicationPad2d(pad2)->forward(image)), pad_reference(image, pad2, PadMode::Replicate, 0));
  check_close(values_of(nn::ReplicationPad3d(pad3)->forward(volume)),
              pad_reference(volume, pad3, PadMode::Replicate, 0));
  check_close(values_of(nn::CircularPad1d(pad1)->forward(line)), pad_reference(line, pad1, PadMode::Circular, 0));
  check_close(values_of(nn::CircularPad2d(pad2)->forward(image)), pad_reference(image, pad2, PadMode::Circular, 0));
  check_close(values_of(nn::CircularPad3d(pad3)->forward(volume)), pad_reference(volume, pad3, PadMode::Circular, 0));
  // An int pads every side; unbatched inputs take the same layers.
  check_close(values_of(nn::ReflectionPad2d(2)->forward(image)),
              pad_reference(image, {2, 2, 2, 2}, PadMode::Reflect, 0));
  check_close(values_of(nn::CircularPad1d(1)->forward(line.select(0, 0))),
              pad_reference(line.select(0, 0), {1, 1}, PadMode::Circular, 0));
  CHECK(nn::ZeroPad3d(0)->padding() == std::vector<int64_t>(6, 0));
}

TEST_CASE("padding layers: PyTorch's reprs, no state, gradients, errors") {
  CHECK(nn::ZeroPad2d({1, 1, 2, 0})->str() == "ZeroPad2d((1, 1, 2, 0))");
  CHECK(nn::ZeroPad1d(2)->str() == "ZeroPad1d((2, 2))");
  CHECK(nn::ConstantPad1d(2, 3.5)->str() == "ConstantPad1d(padding=(2, 2), value=3.5)");
  CHECK(nn::ConstantPad3d(1, 0.0)->str() == "ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=0.0)");
  CHECK(nn::ReflectionPad2d({3, 1, 0, 2})->str() == "ReflectionPad2d((3, 1, 0, 2))");
  CHECK(nn::ReplicationPad3d(1)->str() == "ReplicationPad3d((1, 1, 1, 1, 1, 1))");
  CHECK(nn::CircularPad1d({0, 2})->str() == "CircularPad1d((0, 2))");
  nn::ReflectionPad2d reflect({1, 2, 2, 1});
  CHECK(keys_of(*reflect).empty());
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return reflect->forward(in[0]); }, {leaf({1, 2, 4, 3}, 91)});
  nn::CircularPad1d circular(2);
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return circular->forward(in[0]); }, {leaf({2, 3}, 92)});

  // clang-format off
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { nn::ZeroPad2d({1, 2}); }),
      error_of([&] { nn::ConstantPad3d({1, 2, 3, 4}, 1.0); }),
      error_of([&] { nn::CircularPad2d(1)->forward(small_tensor({4, 4}, 1)); }),
      error_of([&] { nn::ReflectionPad1d(5)->forward(small_tensor({2, 3}, 1)); }),
  };
  // clang-format on
  ember::testing::check_messages_name_lines(messages,
                                            {"ZeroPad2d: padding must be an int or a tuple of 4 ints",
                                             "ConstantPad3d: padding must be an int or a tuple of 6",
                                             "CircularPad2d: expected 3D or 4D input (got 2D input", "pad: reflect"},
                                            first);
}

// ---- bilinear: y[r, o] = sum_ij x1[r, i] W[o, i, j] x2[r, j] + b[o] ----
std::vector<double> bilinear_reference(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                                       const Tensor& bias) {
  const std::vector<double> x1 = values_of(input1), x2 = values_of(input2), w = values_of(weight);
  const std::vector<double> b = bias.defined() ? values_of(bias) : std::vector<double>{};
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  const int64_t rows = input1.numel() / in1;
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double total = b.empty() ? 0.0 : b[o];
      for (int64_t i = 0; i < in1; ++i)
        for (int64_t j = 0; j < in2; ++j) total += x1[r * in1 + i] * w[(o * in1 + i) * in2 + j] * x2[r * in2 + j];
      y[r * out + o] = total;
    }
  return y;
}

TEST_CASE("F::bilinear matches the sum formula, with and without bias and batch dims, and its gradients") {
  const Tensor input1 = small_tensor({2, 3, 4}, 101), input2 = small_tensor({2, 3, 5}, 102);
  const Tensor weight = small_tensor({6, 4, 5}, 103), bias = small_tensor({6}, 104);
  const Tensor output = F::bilinear(input1, input2, weight, bias);
  CHECK(output.sizes() == Dims{2, 3, 6});
  check_close(values_of(output), bilinear_reference(input1, input2, weight, bias));
  check_close(values_of(F::bilinear(input1.select(0, 0).select(0, 1), input2.select(0, 0).select(0, 1), weight)),
              bilinear_reference(input1.select(0, 0).select(0, 1), input2.select(0, 0).select(0, 1), weight, {}));
  gradcheck_leaves([](const std::vector<Tensor>& in) { return F::bilinear(in[0], in[1], in[2], in[3]); },
            {leaf({3, 2}, 105), leaf({3, 4}, 106), leaf({2, 2, 4}, 107), leaf({2}, 108)});
}

TEST_CASE("nn::Bilinear: PyTorch's init bound, repr, state_dict keys, forward, shape errors") {
  nn::Bilinear layer(16, 3, 50, nn::BilinearOptions{.dtype = kFloat64});
  CHECK(layer->str() == "Bilinear(in1_features=16, in2_features=3, out_features=50, bias=True)");
  CHECK(keys_of(*layer) == std::vector<std::string>{"weight", "bias"});
  CHECK(layer->weight.sizes() == Dims{50, 16, 3});
  // U(-1/4, 1/4): every value inside, and the extremes near the bounds (2400 and 50 draws).
  const std::vector<double> weight = values_of(layer->weight), bias = values_of(layer->bias);
  CHECK(*std::max_element(weight.begin(), weight.end()) < 0.25);
  CHECK(*std::min_element(weight.begin(), weight.end()) >= -0.25);
  CHECK(*std::max_element(weight.begin(), weight.end()) > 0.24);
  CHECK(*std::min_element(weight.begin(), weight.end()) < -0.24);
  CHECK(*std::max_element(bias.begin(), bias.end()) < 0.25);
  CHECK(*std::min_element(bias.begin(), bias.end()) >= -0.25);
  CHECK(*std::max_element(bias.begin(), bias.end()) > 0.15);
  CHECK(nn::Bilinear(2, 3, 4, nn::BilinearOptions{.bias = false})->str() ==
        "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=False)");
  const Tensor input1 = small_tensor({5, 16}, 111), input2 = small_tensor({5, 3}, 112);
  check_close(values_of(layer->forward(input1, input2)),
              bilinear_reference(input1, input2, layer->weight, layer->bias));

  const Tensor w = small_tensor({6, 4, 5}, 1), x2_4 = small_tensor({2, 4}, 1), x5 = small_tensor({5}, 1);
  const Tensor x3_5 = small_tensor({3, 5}, 1), x2_3 = small_tensor({2, 3}, 1), x2_5 = small_tensor({2, 5}, 1);
  const Tensor x2_6 = small_tensor({2, 6}, 1), b7 = small_tensor({7}, 1), w2d = small_tensor({6, 4}, 1);
  // clang-format off
  const int first = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { F::bilinear(x2_4, x5, w); }),
      error_of([&] { F::bilinear(x2_4, x3_5, w); }),
      error_of([&] { F::bilinear(x2_3, x2_5, w); }),
      error_of([&] { F::bilinear(x2_4, x2_6, w); }),
      error_of([&] { F::bilinear(x2_4, x2_5, w, b7); }),
      error_of([&] { F::bilinear(x2_4, x2_5, w2d); }),
      error_of([&] { nn::Bilinear(2, -3, 4); }),
  };
  // clang-format on
  ember::testing::check_messages_name_lines(
      messages,
      {"bilinear(): input dimensions do not match: got 2 and 1",
       "bilinear(): input batch dimensions do not match: got 2 and 3",
       "bilinear(): input1 size does not match weight size: got 3 but expected 4",
       "bilinear(): input2 size does not match weight size: got 6 but expected 5",
       "bilinear(): bias size does not match weight size: got shape [7] but expected [6]",
       "bilinear(): weight must be 3-D", "Bilinear: feature counts must be non-negative"},
      first);
}

// ---- trunc_normal_: the truncated normal's closed forms, with z = (x - mean) / std on [alpha, beta] ----
double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

// Checks the sample mean and variance of `values` against the truncated normal's and the empirical
// CDF against its CDF (Kolmogorov-Smirnov, the 0.1% critical value 1.95 / sqrt(n)).
void check_truncated_normal(std::vector<double> values, double mean, double std, double a, double b) {
  const double alpha = (a - mean) / std, beta = (b - mean) / std;
  const double mass = normal_cdf(beta) - normal_cdf(alpha);
  const double pdf_alpha = normal_pdf(alpha), pdf_beta = std::isinf(beta) ? 0.0 : normal_pdf(beta);
  const double alpha_term = std::isinf(alpha) ? 0.0 : alpha * pdf_alpha;
  const double beta_term = std::isinf(beta) ? 0.0 : beta * pdf_beta;
  const double shift = (pdf_alpha - pdf_beta) / mass;
  const double expected_mean = mean + std * shift;
  const double expected_var = std * std * (1.0 + (alpha_term - beta_term) / mass - shift * shift);
  const double n = static_cast<double>(values.size());
  double sum = 0.0;
  int64_t outside = 0;
  for (double value : values) {
    outside += value < a || value > b ? 1 : 0;
    sum += value;
  }
  CHECK(outside == 0);
  const double sample_mean = sum / n;
  double second = 0.0, fourth = 0.0;
  for (double value : values) {
    const double centred = value - sample_mean;
    second += centred * centred;
    fourth += centred * centred * centred * centred;
  }
  const double sample_var = second / n;
  // Six standard errors: sqrt(var / n) for the mean, sqrt((m4 - var^2) / n) for the variance.
  CHECK(std::abs(sample_mean - expected_mean) < 6.0 * std::sqrt(expected_var / n));
  CHECK(std::abs(sample_var - expected_var) < 6.0 * std::sqrt((fourth / n - sample_var * sample_var) / n));
  std::sort(values.begin(), values.end());
  double largest_gap = 0.0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double cdf = (normal_cdf((values[i] - mean) / std) - normal_cdf(alpha)) / mass;
    largest_gap = std::max({largest_gap, std::abs(cdf - i / n), std::abs(cdf - (i + 1) / n)});
  }
  CHECK(largest_gap < 1.95 / std::sqrt(n));
}

TEST_CASE("init::trunc_normal_ follows the truncated normal: bounds, mean, variance and CDF") {
  Tensor tensor = empty({400, 500}, {.dtype = kFloat64});
  nn::init::trunc_normal_(tensor, 1.0, 2.0, -1.0, 4.0);
  check_truncated_normal(values_of(tensor), 1.0, 2.0, -1.0, 4.0);
  // A one-sided tail, out to where erfinv's argument nears 1; and the float32 defaults.
  Tensor tail = empty({100000}, {.dtype = kFloat64});
  nn::init::trunc_normal_(tail, 0.0, 1.0, 1.5, std::numeric_limits<double>::infinity());
  check_truncated_normal(values_of(tail), 0.0, 1.0, 1.5, std::numeric_limits<double>::infinity());
  Tensor defaults = empty({300, 300});
  nn::init::trunc_normal_(defaults);
  check_truncated_normal(values_of(defaults), 0.0, 1.0, -2.0, 2.0);
}

// erfinv(y) by bisection on erfc (erfc(x) = 1 - y for y >= 0, odd symmetry below): slow, but an
// independent method, accurate in the tails where erf rounds to 1.
double erfinv_by_bisection(double y) {
  if (y < 0.0) return -erfinv_by_bisection(-y);
  double low = 0.0, high = 7.0;  // erfc(7) = 4e-23, below any 1 - y of a float64 y < 1
  for (int step = 0; step < 200 && low < high; ++step) {
    const double middle = 0.5 * (low + high);
    if (middle == low || middle == high) break;
    (std::erfc(middle) > 1.0 - y ? low : high) = middle;
  }
  return 0.5 * (low + high);
}

TEST_CASE("init::trunc_normal_ is PyTorch's inverse CDF of its uniform draws, to float64 accuracy") {
  // The same generator state draws the same U[2 cdf(a') - 1, 2 cdf(b') - 1); each value must be
  // mean + std sqrt(2) erfinv(u), clamped, which the moments above cannot resolve finely.
  for (const auto& [mean, std, a, b] : std::vector<std::array<double, 4>>{
           {1.0, 2.0, -1.0, 4.0}, {0.0, 1.0, 1.5, std::numeric_limits<double>::infinity()}, {0.0, 0.5, -3.0, 0.2}}) {
    Generator for_values(314), for_uniforms(314);
    Tensor values = empty({2000}, {.dtype = kFloat64});
    nn::init::trunc_normal_(values, mean, std, a, b, &for_values);
    Tensor uniforms = empty({2000}, {.dtype = kFloat64});
    nn::init::uniform_(uniforms, 2.0 * normal_cdf((a - mean) / std) - 1.0, 2.0 * normal_cdf((b - mean) / std) - 1.0,
                       &for_uniforms);
    const std::vector<double> actual = values_of(values), u = values_of(uniforms);
    for (size_t i = 0; i < u.size(); ++i) {
      const double expected = std::clamp(mean + std * std::numbers::sqrt2 * erfinv_by_bisection(u[i]), a, b);
      INFO("u = ", u[i], ": ", actual[i], " vs ", expected);
      CHECK(std::abs(actual[i] - expected) <= 1e-11 * (1.0 + std::abs(expected)));
    }
  }
}

TEST_CASE("init::trunc_normal_ is reproducible from a generator and refuses bad arguments") {
  Generator first(42), second(42);
  Tensor one = empty({64}), two = empty({64});
  nn::init::trunc_normal_(one, 0.0, 0.02, -0.04, 0.04, &first);
  nn::init::trunc_normal_(two, 0.0, 0.02, -0.04, 0.04, &second);
  CHECK(values_of(one) == values_of(two));
  nn::init::trunc_normal_(two, 0.0, 0.02, -0.04, 0.04, &second);
  CHECK(values_of(one) != values_of(two));
  // A parameter that requires grad is filled without recording.
  nn::Linear linear(3, 4);
  nn::init::trunc_normal_(linear->weight, 0.0, 0.1, -0.2, 0.2);
  CHECK(!linear->weight.grad_fn());

  Tensor tensor = empty({3});
  // clang-format off
  const int first_line = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { nn::init::trunc_normal_(tensor, 0.0, 0.0); }),
      error_of([&] { nn::init::trunc_normal_(tensor, 0.0, 1.0, 2.0, -2.0); }),
      error_of([&] { nn::init::trunc_normal_(ones({3}, {.dtype = kInt64})); }),
  };
  // clang-format on
  ember::testing::check_messages_name_lines(messages,
                                            {"nn::init::trunc_normal_: std must be positive and finite, got 0",
                                             "nn::init::trunc_normal_: the bounds must satisfy a <= b, got a=2 b=-2",
                                             "nn::init::trunc_normal_: expected a floating-point tensor"},
                                            first_line);
}

}  // namespace

}  // namespace test_nn_padding_bilinear_init
