// max / min along a dim with indices and the vector norm (composites,
// runtime/functional_reductions.cpp): float64 loops, ties and NaN, 0-d and empty inputs, where the
// gradient goes, finite differences, and the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "composite_loss_checks.h"
#include "error_of.h"

namespace test_reductions_max_norm {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double norm_of(const std::vector<double>& values, double p) {
  if (std::isinf(p)) {
    double extreme = p > 0 ? 0.0 : INFINITY;
    for (double value : values)
      extreme = p > 0 ? std::max(extreme, std::abs(value)) : std::min(extreme, std::abs(value));
    return extreme;
  }
  double total = 0.0;
  for (double value : values) total += p == 0.0 ? (value != 0.0 ? 1.0 : 0.0) : std::pow(std::abs(value), p);
  return p == 0.0 ? total : std::pow(total, 1.0 / p);
}

}  // namespace

TEST_CASE("max and min along a dim give the values and the first index of ties, as loops do") {
  const Tensor input = random_tensor({3, 4, 5}, 70);
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      const auto [maximum, max_index] = max(input, dim, keepdim);
      const auto [minimum, min_index] = min(input, dim, keepdim);
      CHECK(max_index.dtype() == kInt64);
      CHECK(maximum.sizes() == amax(input, {dim}, keepdim).sizes());
      CHECK(max_index.sizes() == maximum.sizes());
      check_exactly(maximum, values_of(amax(input, {dim}, keepdim)));
      check_exactly(minimum, values_of(amin(input, {dim}, keepdim)));
      check_exactly(max_index, values_of(argmax(input, dim, keepdim)));
      check_exactly(min_index, values_of(argmin(input, dim, keepdim)));
    }
  }
  const Tensor ties = from_vector<int64_t>({1, 3, 3, 2, 2, 1}, {2, 3});
  const auto [tie_max, tie_max_index] = max(ties, 1);
  const auto [tie_min, tie_min_index] = min(ties, 1);
  CHECK(tie_max.dtype() == kInt64);
  CHECK(tie_max.to_vector<int64_t>() == std::vector<int64_t>{3, 2});
  CHECK(tie_max_index.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(tie_min.to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(tie_min_index.to_vector<int64_t>() == std::vector<int64_t>{0, 2});
  const auto [nan_max, nan_index] = max(from_vector<double>({1.0, NAN, 3.0}), 0);
  CHECK(std::isnan(nan_max.item()));
  CHECK(nan_index.item<int64_t>() == 1);
}

TEST_CASE("max and min of 0-d and empty inputs: a 0-d input is its own maximum at index 0") {
  const auto [value, index] = max(scalar_tensor(2.5, {.dtype = kFloat64}), 0);
  CHECK(value.item() == 2.5);
  CHECK(index.item<int64_t>() == 0);
  CHECK(index.dim() == 0);
  const auto [rows, row_index] = min(zeros({0, 3}), 1);
  CHECK(rows.sizes() == Dims{0});
  CHECK(row_index.sizes() == Dims{0});
  const int line = __LINE__ + 1;
  const std::string message = error_of([] { max(zeros({2, 0}), 1); });
  CHECK(message.find("max: cannot compute the maximum over dim 1 of size 0 (input shape [2, 0]): the operation has "
                     "no identity") != std::string::npos);
  CHECK(names_line(message, "test_reductions_max_norm.cpp", line));
  CHECK(error_of([] { min(zeros({2, 3}), 2); }).find("min: dim 2 is out of range for a tensor of rank 2") !=
        std::string::npos);
  // The method over all elements names itself, not the amax / amin it runs on.
  const int method_line = __LINE__ + 1;
  const std::string of_all = error_of([] { zeros({0, 2}).max(); });
  CHECK(of_all.find("max: cannot compute the maximum of an empty tensor (shape [0, 2]): the operation has no "
                    "identity") != std::string::npos);
  CHECK(names_line(of_all, "test_reductions_max_norm.cpp", method_line));
  CHECK(error_of([] { zeros({0}).min(); }).find("min: cannot compute the minimum of an empty tensor (shape [0])") !=
        std::string::npos);
}

TEST_CASE("the gradient of max and min along a dim reaches the selected element only") {
  const Tensor x = from_vector<double>({1, 3, 3, 2, 2, 1}, {2, 3}).requires_grad_();
  const auto [values, indices] = max(x, 1);
  mul(values, from_vector<double>({2.0, -1.0})).sum().backward();
  check_exactly(x.grad(), {0, 2, 0, -1, 0, 0});  // ties: the first index only, as PyTorch's max(dim)
  for (int64_t dim : {0, 1, -1}) {
    INFO("dim " << dim);
    gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(max(t[0], dim)); }, {random_tensor({3, 4}, 71)});
    gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(min(t[0].t(), dim, true)); },
              {random_tensor({3, 4}, 72)});
  }
}

TEST_CASE("norm matches float64 loops for p = 2, 1, inf, -inf, 0, 3, 0.5 and -1 over dims") {
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    Tensor input = random_tensor({3, 4, 5}, 73, dtype);
    input = mul(input, gt(abs(input), full({1}, 0.5, {.dtype = dtype})));  // zeros for p = 0 to count
    for (double p : {2.0, 1.0, kInfinity, -kInfinity, 0.0, 3.0, 0.5, -1.0}) {
      for (const Dims& dims : {Dims{}, Dims{1}, Dims{0, 2}}) {
        for (bool keepdim : {false, true}) {
          INFO(dtype_name(dtype) << " p " << p << " dims " << dims.str() << " keepdim " << keepdim);
          const Tensor result = norm(input, p, dims, keepdim);
          CHECK(result.dtype() == dtype);
          CHECK(result.sizes() == sum(input, dims, keepdim).sizes());
          check_close(result, grouped_reference(input, dims, [p](const auto& v) { return norm_of(v, p); }),
                      tolerance);
        }
      }
    }
  }
  CHECK(norm(zeros({0})).item() == 0.0);
}

TEST_CASE("norm's gradients match finite differences, and are 0 at a zero vector as PyTorch's") {
  for (double p : {2.0, 1.0, kInfinity, 3.0, 1.5}) {
    INFO("p " << p);
    gradcheck([&](const std::vector<Tensor>& t) { return norm(t[0], p, {1}); }, {random_tensor({3, 4}, 74)});
  }
  for (double p : {2.0, 3.0}) {
    INFO("p " << p);
    const Tensor zero_rows = from_vector<double>({0, 0, 0, 3, 4, 0}, {2, 3}).requires_grad_();
    norm(zero_rows, p, {1}).sum().backward();
    const std::vector<double> gradient = values_of(zero_rows.grad());
    CHECK(std::vector<double>(gradient.begin(), gradient.begin() + 3) == std::vector<double>{0, 0, 0});
    if (p == 2.0) check_close(zero_rows.grad(), {0, 0, 0, 0.6, 0.8, 0}, 1e-15);
  }
  // For p < 1 a zero element's gradient is 0 (PyTorch's), not 0 * inf = NaN; the others' follow
  // d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) norm^(1-p), and a zero makes a negative norm flat.
  const Tensor with_zero = from_vector<double>({0, 1, 4}).requires_grad_();
  norm(with_zero, 0.5).backward();
  check_close(with_zero.grad(), {0, 3, 1.5}, 1e-15);
  const Tensor negative_p = from_vector<double>({0, 2, -4}).requires_grad_();
  CHECK(norm(negative_p, -1.0).item() == 0.0);
  norm(negative_p, -1.0).backward();
  check_exactly(negative_p.grad(), {0, 0, 0});
  for (double p : {0.5, -1.0}) {
    INFO("p " << p);
    gradcheck([&](const std::vector<Tensor>& t) { return norm(t[0], p, {1}); }, {random_tensor({3, 4}, 75)});
  }
}

TEST_CASE("norm refuses integers and an empty inf or negative norm, naming the caller's line") {
  const int line = __LINE__ + 1;
  const std::string message = error_of([] { norm(zeros({2, 0}), INFINITY, {1}); });
  CHECK(message.find("norm: cannot compute the inf norm over dim 1 of size 0 (input shape [2, 0])") !=
        std::string::npos);
  CHECK(names_line(message, "test_reductions_max_norm.cpp", line));
  CHECK(error_of([] { norm(zeros({0}), -1.0); }).find("norm: cannot compute the -1 norm over dim 0") !=
        std::string::npos);
  CHECK(error_of([] { norm(zeros({3}, {.dtype = kInt64})); }).find("norm: expected a floating-point input, got "
                                                                   "int64") != std::string::npos);
  CHECK(error_of([] { norm(zeros({3}), NAN); }).find("norm: p must be a number, got nan") != std::string::npos);
}

}  // namespace test_reductions_max_norm
