// rms_norm and group_norm (runtime/functional_norms.cpp) and nn::RMSNorm / nn::GroupNorm against
// float64 loops: the statistics over the right elements, weights and biases per element or
// channel, default eps, 16-bit inputs computed in float32, autocast, finite-difference gradients,
// the modules' parameters and printed form, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "error_of.h"
#include "numeric_check.h"
#include "runtime/autocast.h"
#include "runtime/nn/nn.h"

namespace test_norms {

using namespace ember;
using namespace ember::testing;

namespace {

// rows x features, row-major: x / sqrt(mean(x^2) + eps) * weight (weight empty: none).
std::vector<double> rms_reference(const std::vector<double>& x, int64_t features, const std::vector<double>& weight,
                                  double eps) {
  std::vector<double> y(x.size());
  for (size_t row = 0; row < x.size() / features; ++row) {
    double squares = 0.0;
    for (int64_t f = 0; f < features; ++f) squares += x[row * features + f] * x[row * features + f];
    const double scale = 1.0 / std::sqrt(squares / static_cast<double>(features) + eps);
    for (int64_t f = 0; f < features; ++f)
      y[row * features + f] = x[row * features + f] * scale * (weight.empty() ? 1.0 : weight[f]);
  }
  return y;
}

// [N, C, spatial] row-major, groups of C / G channels: (x - mean) / sqrt(var + eps) * w[c] + b[c].
std::vector<double> group_reference(const std::vector<double>& x, int64_t N, int64_t C, int64_t spatial, int64_t G,
                                    const std::vector<double>& w, const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  const int64_t group = C / G * spatial;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const int64_t start = (n * C + g * (C / G)) * spatial;
      double mean = 0.0, variance = 0.0;
      for (int64_t i = 0; i < group; ++i) mean += x[start + i] / static_cast<double>(group);
      for (int64_t i = 0; i < group; ++i) variance += std::pow(x[start + i] - mean, 2) / static_cast<double>(group);
      for (int64_t i = 0; i < group; ++i) {
        const int64_t c = g * (C / G) + i / spatial;
        y[start + i] =
            (x[start + i] - mean) / std::sqrt(variance + eps) * (w.empty() ? 1.0 : w[c]) + (b.empty() ? 0.0 : b[c]);
      }
    }
  return y;
}

}  // namespace

TEST_CASE("rms_norm matches a float64 loop over the trailing dims, with and without a weight") {
  const Tensor x = random_tensor({3, 2, 4}, 201);
  const Tensor weight = random_tensor({2, 4}, 202);
  check_close(rms_norm(x, {2, 4}, weight, 1e-3), rms_reference(values_of(x), 8, values_of(weight), 1e-3), 1e-14);
  check_close(rms_norm(x, {4}), rms_reference(values_of(x), 4, {}, std::numeric_limits<double>::epsilon()), 1e-14);
  // A strided input normalises its logical rows.
  const Tensor transposed = x.transpose(0, 2);  // [4, 2, 3]
  check_close(rms_norm(transposed, {3}), rms_reference(values_of(transposed), 3, {}, 2.220446049250313e-16), 1e-14);
  gradcheck([](const std::vector<Tensor>& t) { return rms_norm(t[0], {4}, t[1], 0.01); },
            {random_tensor({2, 3, 4}, 203), random_tensor({4}, 204)});
}

TEST_CASE("rms_norm: 16-bit inputs computed in float32 with its epsilon, rounded once, autocast keeping float32") {
  const Tensor x = random_tensor({2, 8}, 205).to(kBFloat16);
  const Tensor weight = random_tensor({8}, 206).to(kBFloat16);
  const Tensor y = rms_norm(x, {8}, weight);
  CHECK(y.dtype() == kBFloat16);
  const Tensor wide = rms_norm(x.to(kFloat32), {8}, weight.to(kFloat32));
  CHECK(values_of(y) == values_of(wide.to(kBFloat16)));
  // float32's epsilon by default: visible on an all-zero row of tiny values.
  const Tensor tiny = full({1, 2}, 1e-5, {.dtype = kFloat32});
  check_close(rms_norm(tiny, {2}), rms_reference({1e-5, 1e-5}, 2, {}, std::numeric_limits<float>::epsilon()), 1e-6);
  AutocastGuard autocast(kBFloat16);
  CHECK(rms_norm(x, {8}, weight).dtype() == kFloat32);
}

TEST_CASE("group_norm matches a float64 loop for several ranks, groups and affine parameters") {
  for (const Dims& shape : {Dims{2, 6}, Dims{2, 6, 5}, Dims{3, 4, 2, 3}}) {
    INFO("shape ", shape);
    const int64_t N = shape[0], C = shape[1];
    int64_t spatial = 1;
    for (int i = 2; i < shape.size(); ++i) spatial *= shape[i];
    const Tensor x = random_tensor(shape, 211);
    const Tensor w = random_tensor({C}, 212), b = random_tensor({C}, 213);
    for (const int64_t G : {int64_t{1}, int64_t{2}, C}) {
      INFO("groups ", G);
      check_close(group_norm(x, G, w, b, 1e-4),
                  group_reference(values_of(x), N, C, spatial, G, values_of(w), values_of(b), 1e-4), 1e-12);
      check_close(group_norm(x, G), group_reference(values_of(x), N, C, spatial, G, {}, {}, 1e-5), 1e-12);
    }
  }
  gradcheck([](const std::vector<Tensor>& t) { return group_norm(t[0], 2, t[1], t[2]); },
            {random_tensor({2, 4, 3}, 214), random_tensor({4}, 215), random_tensor({4}, 216)});
  // 16-bit: float32 inside, one rounding, float32 weights accepted.
  const Tensor x16 = random_tensor({2, 4, 3}, 217).to(kFloat16);
  const Tensor w32 = random_tensor({4}, 218).to(kFloat32);
  const Tensor y = group_norm(x16, 2, w32);
  CHECK(y.dtype() == kFloat16);
  CHECK(values_of(y) == values_of(group_norm(x16.to(kFloat32), 2, w32).to(kFloat16)));
}

TEST_CASE("nn::GroupNorm and nn::RMSNorm: PyTorch's parameters, forward and printed form") {
  const nn::GroupNorm group(2, 4);
  CHECK(values_of(group->weight) == std::vector<double>(4, 1.0));
  CHECK(values_of(group->bias) == std::vector<double>(4, 0.0));
  const Tensor x = random_tensor({2, 4, 3}, 221).to(kFloat32);
  CHECK(values_of(group(x)) == values_of(group_norm(x, 2, group->weight, group->bias)));
  std::ostringstream printed;
  printed << group;
  CHECK(printed.str() == "GroupNorm(2, 4, eps=1e-05, affine=True)");
  const nn::RMSNorm rms(3, {.eps = 1e-6});
  CHECK(rms->named_parameters().size() == 1);
  CHECK(values_of(rms(x)) == values_of(rms_norm(x, {3}, rms->weight, 1e-6)));
  std::ostringstream printed_rms;
  printed_rms << nn::RMSNorm(Dims{2, 3}, {.elementwise_affine = false});
  CHECK(printed_rms.str() == "RMSNorm((2, 3), eps=None, elementwise_affine=False)");
  CHECK(nn::GroupNorm(2, 4, {.affine = false})->parameters().empty());
}

TEST_CASE("rms_norm, group_norm and their modules refuse bad arguments by name") {
  const Tensor x = random_tensor({2, 4, 3}, 231);
  CHECK_THROWS_WITH_AS(rms_norm(x, {4}),
                       doctest::Contains("rms_norm: given normalized_shape=[4], expected an input "
                                         "of shape [*, 4], but got input of shape [2, 4, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(rms_norm(x, {3}, random_tensor({4}, 232)),
                       doctest::Contains("expected weight of shape normalized_shape=[3], got [4]"), Error);
  CHECK_THROWS_WITH_AS(rms_norm(x.to(kInt64), {3}), doctest::Contains("rms_norm: input must be a floating tensor"),
                       Error);
  CHECK_THROWS_WITH_AS(group_norm(x, 3),
                       doctest::Contains("divisible by num_groups, but got input of shape [2, 4, 3] "
                                         "and num_groups=3"),
                       Error);
  CHECK_THROWS_WITH_AS(group_norm(x, 2, random_tensor({3}, 233)),
                       doctest::Contains("expected weight to be a vector of size equal to the number of channels"),
                       Error);
  CHECK_THROWS_WITH_AS(group_norm(random_tensor({4}, 234), 2), doctest::Contains("expected at least 2 dims"), Error);
  CHECK_THROWS_WITH_AS(nn::GroupNorm(3, 4), doctest::Contains("GroupNorm: num_channels must be divisible"), Error);
  CHECK_THROWS_WITH_AS(nn::GroupNorm(2, 4)(random_tensor({2, 6}, 235).to(kFloat32)),
                       doctest::Contains("group_norm: expected weight to be a vector of size equal to the number of channels in the input (6)"), Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { rms_norm(x, {5}); });
  CHECK(names_line(message, line));
}

}  // namespace test_norms
