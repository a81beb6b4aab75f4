// std and logsumexp (composites, runtime/functional_reductions.cpp) against float64 loops over
// dims, corrections and keepdim; std's zero gradient at a zero result, logsumexp's -inf / +inf /
// NaN / empty rows, gradients by finite differences and the errors.
#include <doctest/doctest.h>

#include <cmath>

#include "composite_loss_checks.h"
#include "error_of.h"

namespace test_reductions_std_logsumexp {

using namespace ember;
using namespace ember::testing;

namespace {

double std_of(const std::vector<double>& values, int64_t correction) {
  double mean = 0.0;
  for (double value : values) mean += value;
  mean /= static_cast<double>(values.size());
  double squares = 0.0;
  for (double value : values) squares += (value - mean) * (value - mean);
  return std::sqrt(squares / std::max(0.0, static_cast<double>(values.size()) - static_cast<double>(correction)));
}

// The max shift in plain loops; -inf groups give -inf, an empty group log(0) = -inf.
double logsumexp_of(const std::vector<double>& values) {
  double maximum = -INFINITY;
  for (double value : values) maximum = std::max(maximum, value);
  if (std::isinf(maximum)) maximum = 0.0;
  double total = 0.0;
  for (double value : values) total += std::exp(value - maximum);
  return maximum + std::log(total);
}

const std::vector<Dims> kDimsCases{{}, {1}, {0, 2}, {-1}};

}  // namespace

TEST_CASE("std matches float64 loops over dims, corrections and keepdim") {
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    const Tensor input = random_tensor({3, 4, 5}, 60, dtype);
    for (const Dims& dims : kDimsCases) {
      for (int64_t correction : {0, 1, 2}) {
        for (bool keepdim : {false, true}) {
          INFO(dtype_name(dtype) << " dims " << dims.str() << " correction " << correction << " keepdim " << keepdim);
          const Tensor result = ember::std(input, dims, correction, keepdim);
          CHECK(result.sizes() == var(input, dims, correction, keepdim).sizes());
          check_close(result, grouped_reference(input, dims, [&](const auto& v) { return std_of(v, correction); }),
                      tolerance);
        }
      }
    }
  }
}

TEST_CASE("std's gradient matches finite differences and is 0 where the result is 0, as PyTorch") {
  for (const Dims& dims : kDimsCases) {
    INFO("dims " << dims.str());
    gradcheck([&](const std::vector<Tensor>& t) { return ember::std(t[0], dims, 1, false); },
              {random_tensor({3, 4, 5}, 61)});
  }
  // Row 0 is constant: std 0, and PyTorch's backward masks its infinite 1 / (2 std) to 0.
  const Tensor x = from_vector<double>({2, 2, 2, 1, 2, 3}, {2, 3}).requires_grad_();
  const Tensor result = ember::std(x, {1});
  check_close(result, {0.0, 1.0}, 1e-15);
  result.sum().backward();
  check_close(x.grad(), {0.0, 0.0, 0.0, -0.5, 0.0, 0.5}, 1e-15);
}

TEST_CASE("logsumexp matches float64 loops over dims and keepdim, and is stable for large values") {
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    const Tensor input = mul(random_tensor({3, 4, 5}, 62, dtype), 20.0);
    for (const Dims& dims : kDimsCases) {
      for (bool keepdim : {false, true}) {
        INFO(dtype_name(dtype) << " dims " << dims.str() << " keepdim " << keepdim);
        const Tensor result = logsumexp(input, dims, keepdim);
        CHECK(result.sizes() == sum(input, dims, keepdim).sizes());
        check_close(result, grouped_reference(input, dims, logsumexp_of), tolerance);
      }
    }
  }
  check_close(logsumexp(from_vector<float>({1000, 1000})), {1000.0 + std::log(2.0)}, 1e-7);
  // Integers are computed in float32, as PyTorch's default dtype.
  const Tensor from_integers = logsumexp(from_vector<int64_t>({1, 2, 3}));
  CHECK(from_integers.dtype() == kFloat32);
  check_close(from_integers, {logsumexp_of({1, 2, 3})}, 1e-6);
}

TEST_CASE("logsumexp of -inf, +inf, NaN and empty rows follows PyTorch") {
  const Tensor rows = from_vector<double>({-INFINITY, -INFINITY, 0.0, -INFINITY, INFINITY, 1.0, NAN, 1.0}, {4, 2});
  check_exactly(logsumexp(rows, {1}), {-INFINITY, 0.0, INFINITY, NAN});
  const Tensor empty_rows = zeros({2, 0}, {.dtype = kFloat64});
  check_exactly(logsumexp(empty_rows, {1}), {-INFINITY, -INFINITY});
  CHECK(logsumexp(empty_rows, {0}).sizes() == Dims{0});
  CHECK(logsumexp(scalar_tensor(2.5, {.dtype = kFloat64})).item() == 2.5);
}

TEST_CASE("logsumexp's gradient is softmax, by finite differences, also for a -inf element") {
  for (const Dims& dims : kDimsCases) {
    INFO("dims " << dims.str());
    gradcheck([&](const std::vector<Tensor>& t) { return logsumexp(t[0], dims, true); },
              {mul(random_tensor({3, 4, 5}, 63), 4.0)});
  }
  const Tensor x = from_vector<double>({-INFINITY, 0.0, std::log(3.0)}).requires_grad_();
  logsumexp(x).backward();
  check_close(x.grad(), {0.0, 0.25, 0.75}, 1e-15);
}

TEST_CASE("std and logsumexp errors name the function and the caller's line") {
  const Tensor x = random_tensor({2, 3}, 64);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { ember::std(x, {2}); });
  CHECK(message.find("std: dim 2 is out of range for a tensor of rank 2") != std::string::npos);
  CHECK(names_line(message, "test_reductions_std_logsumexp.cpp", line));
  CHECK(error_of([&] { ember::std(x.to(kInt64)); })
            .find("std: expected a floating-point input, got int64 (shape [2, 3])") != std::string::npos);
  CHECK(error_of([&] { logsumexp(x, {0, 0}); }).find("logsumexp: dim 0 appears more than once in dims [0, 0]") !=
        std::string::npos);
}

}  // namespace test_reductions_std_logsumexp
