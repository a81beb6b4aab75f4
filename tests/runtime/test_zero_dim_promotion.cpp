// A 0-d tensor in a binary op counts less than a tensor with dims (PyTorch's result_type): it
// changes the result's dtype only when it is of a higher category (bool < integer < floating).
// So a bf16 activation times a float32 scalar tensor stays bf16, as in libtorch, instead of
// doubling its memory. Checked on the dtype rule itself, on every kind of op that uses it
// (arithmetic, comparison, where, in place), and on the gradients that flow back to each input.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"

namespace test_zero_dim_promotion {

using namespace ember;

namespace {

const TensorOptions kOnCpu{.device = kCPU};

Tensor zero_dim(double value, DType dtype) { return scalar_tensor(value, {.dtype = dtype, .device = kCPU}); }

}  // namespace

TEST_CASE("result_type: a 0-d tensor counts only when its category is higher") {
  struct Case {
    DType with_dims, zero_dim, expected;
  };
  const Case cases[] = {
      {kFloat32, kFloat64, kFloat32},   {kBFloat16, kFloat32, kBFloat16}, {kFloat16, kFloat64, kFloat16},
      {kInt32, kInt64, kInt32},         {kInt32, kFloat64, kFloat64},     {kInt64, kFloat16, kFloat16},
      {kBool, kInt32, kInt32},          {kBool, kFloat32, kFloat32},      {kInt32, kBool, kInt32},
      {kFloat32, kInt64, kFloat32},     {kBFloat16, kFloat16, kBFloat16},
  };
  for (const Case& c : cases) {
    INFO(c.with_dims, " with a 0-d ", c.zero_dim);
    CHECK(result_type(c.with_dims, false, c.zero_dim, true) == c.expected);
    CHECK(result_type(c.zero_dim, true, c.with_dims, false) == c.expected);  // either side
  }
  // Two tensors of the same kind promote as promote_types does.
  CHECK(result_type(kFloat32, true, kFloat64, true) == kFloat64);
  CHECK(result_type(kBFloat16, false, kFloat16, false) == kFloat32);
  CHECK(result_type(kInt32, false, kInt64, false) == kInt64);
}

TEST_CASE("binary ops, comparisons, where and in-place ops follow result_type for 0-d operands") {
  const Tensor halves = ones({3}, {.dtype = kBFloat16, .device = kCPU});
  const Tensor ints = from_vector(std::vector<int32_t>{3, -2, 5}, {3}, kOnCpu);
  CHECK(mul(halves, zero_dim(2.5, kFloat32)).dtype() == kBFloat16);
  CHECK(mul(halves, zero_dim(2.5, kFloat32)).to(kFloat32).to_vector<float>() == std::vector<float>{2.5f, 2.5f, 2.5f});
  CHECK(add(zero_dim(1.0, kFloat64), ones({2}, kOnCpu)).dtype() == kFloat32);
  CHECK(sub(ints, zero_dim(1.0, kInt64)).dtype() == kInt32);
  CHECK(sub(ints, zero_dim(1.0, kInt64)).to_vector<int32_t>() == std::vector<int32_t>{2, -3, 4});
  const Tensor scaled = mul(ints, zero_dim(0.5, kFloat64));  // a higher category: it counts
  CHECK(scaled.dtype() == kFloat64);
  CHECK(scaled.to_vector<double>() == std::vector<double>{1.5, -1.0, 2.5});
  CHECK(div(ints, zero_dim(2.0, kInt64)).dtype() == kFloat32);  // true division of integers
  CHECK(maximum(ones({2}, {.dtype = kFloat16, .device = kCPU}), zero_dim(3.0, kFloat64)).dtype() == kFloat16);
  // Both 0-d: ordinary promotion.
  CHECK(mul(zero_dim(2.0, kFloat32), zero_dim(3.0, kFloat64)).dtype() == kFloat64);

  // A comparison runs in result_type too: int32 against a 0-d float64 compares as float64.
  CHECK(lt(ints, zero_dim(2.5, kFloat64)).to_vector<bool>() == std::vector<bool>{false, true, false});
  CHECK(eq(ints, zero_dim(3.0, kInt64)).to_vector<bool>() == std::vector<bool>{true, false, false});
  const Tensor condition = from_vector(std::vector<bool>{true, false, true}, {3}, kOnCpu);
  const Tensor chosen = where(condition, ones({3}, kOnCpu), zero_dim(-1.0, kFloat64));
  CHECK(chosen.dtype() == kFloat32);
  CHECK(chosen.to_vector<float>() == std::vector<float>{1.f, -1.f, 1.f});

  // In place: a float32 target may take a 0-d float64, an int32 one a 0-d int64.
  Tensor target = ones({2}, kOnCpu);
  target.add_(zero_dim(0.25, kFloat64));
  CHECK(target.to_vector<float>() == std::vector<float>{1.25f, 1.25f});
  Tensor counts = from_vector(std::vector<int32_t>{1, 2}, {2}, kOnCpu);
  counts.mul_(zero_dim(3.0, kInt64));
  CHECK(counts.to_vector<int32_t>() == std::vector<int32_t>{3, 6});
  CHECK_THROWS_WITH_AS(counts.mul_(zero_dim(0.5, kFloat32)),
                       doctest::Contains("the result type float32 cannot be stored in the in-place target of "
                                         "type int32"),
                       Error);
}

TEST_CASE("gradients through a bf16 tensor times a float32 0-d tensor come back in each input's dtype") {
  const std::vector<float> values{0.5f, -1.25f, 2.0f, 0.75f};
  const Tensor x = from_vector(values, {4}, kOnCpu).to(kBFloat16).requires_grad_();
  const Tensor scale = zero_dim(1.5, kFloat32).requires_grad_();
  const Tensor y = mul(x, scale);
  REQUIRE(y.dtype() == kBFloat16);
  sum(mul(y, y)).backward();
  // d/dscale sum((x s)^2) = 2 s sum(x^2); d/dx = 2 s^2 x. The values are exact in bf16.
  REQUIRE(scale.grad().dtype() == kFloat32);
  REQUIRE(scale.grad().dim() == 0);
  double squares = 0.0;
  for (float v : values) squares += static_cast<double>(v) * v;
  CHECK(scale.grad().item() == doctest::Approx(2.0 * 1.5 * squares).epsilon(1e-2));
  REQUIRE(x.grad().dtype() == kBFloat16);
  const std::vector<float> x_grad = x.grad().to(kFloat32).to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i)
    CHECK(x_grad[i] == doctest::Approx(2.0 * 1.5 * 1.5 * values[i]).epsilon(1e-2));
}

namespace {

std::vector<float> as_floats(const Tensor& tensor) { return tensor.to(kFloat32).to_vector<float>(); }
Tensor bf16_values(std::vector<float> values) {
  const int64_t count = static_cast<int64_t>(values.size());
  return from_vector(values, {count}, kOnCpu).to(kBFloat16);
}

}  // namespace

// As PyTorch's CPU loops do, a 0-d operand of another dtype than a 16-bit float result is read at
// float (opmath) precision and the result is rounded once; rounding it to bf16 first gives other
// numbers. Expected values: numpy, float32 arithmetic of the bf16 inputs with np.float32(scalar),
// then round-to-nearest-even to bf16 via the float32 bits (b + 0x7FFF + ((b >> 16) & 1)) & ~0xFFFF
// (f16: np.float16 of the float32 result). Rounding the scalar first gives the value in each comment.
TEST_CASE("a 0-d float operand of a bf16 or f16 op is not rounded to 16 bits before the op") {
  const Tensor x = bf16_values({100.f, 3.f, 7.f});
  CHECK(as_floats(mul(x, zero_dim(1.004, kFloat32))) == std::vector<float>{100.5f, 3.015625f, 7.03125f});  // 101
  CHECK(as_floats(mul(zero_dim(1.004, kFloat32), x)) == std::vector<float>{100.5f, 3.015625f, 7.03125f});
  CHECK(as_floats(mul(x, zero_dim(1.004, kFloat32))) == as_floats(mul(x, 1.004)));  // the host-scalar op
  CHECK(as_floats(div(x, zero_dim(0.3, kFloat32))) == std::vector<float>{334.f, 10.f, 23.375f});  // 332, 23.25
  CHECK(as_floats(div(zero_dim(300.7, kFloat32), bf16_values({3.f, 7.f, 0.5f}))) ==
        std::vector<float>{100.f, 43.f, 600.f});  // 42.75

  // add and sub, with alpha, the 0-d operand on either side; 1.0035 rounds to 1.0 in bf16.
  const Tensor s = zero_dim(1.0035, kFloat32);
  CHECK(as_floats(add(bf16_values({-1.f, 2.f, 0.5f}), s)) == std::vector<float>{0.0034942626953125f, 3.f, 1.5f});
  CHECK(as_floats(add(s, bf16_values({-0.5f, 1.f, 0.25f}), 3.0)) == std::vector<float>{-0.49609375f, 4.f, 1.75f});
  CHECK(as_floats(sub(bf16_values({2.f, -1.f, 4.f}), s, 2.0)) ==
        std::vector<float>{-0.006988525390625f, -3.f, 1.9921875f});  // 0, -3, 2
  CHECK(as_floats(sub(s, bf16_values({-1.f, 2.f, 0.5f}))) == std::vector<float>{2.f, -0.99609375f, 0.50390625f});

  // In place, as PyTorch's mul_ and add_.
  Tensor scaled = x.clone();
  scaled.mul_(zero_dim(1.004, kFloat32));
  CHECK(as_floats(scaled) == std::vector<float>{100.5f, 3.015625f, 7.03125f});
  Tensor shifted = bf16_values({-1.f, 2.f, 0.5f});
  shifted.add_(s);
  CHECK(as_floats(shifted) == std::vector<float>{0.0034942626953125f, 3.f, 1.5f});

  // A float64 0-d tensor with float16 values; an int64 one (257 is 256 in bf16: 3 * 256 = 768).
  const Tensor halves = from_vector(std::vector<float>{1000.f, 3.f, 7.f}, {3}, kOnCpu).to(kFloat16);
  CHECK(as_floats(mul(halves, zero_dim(1.0003, kFloat64))) == std::vector<float>{1000.5f, 3.f, 7.00390625f});
  CHECK(as_floats(mul(bf16_values({1.f, 3.f, -0.5f}), zero_dim(257, kInt64))) ==
        std::vector<float>{256.f, 772.f, -128.f});
  // A 0-d bf16 operand is already the result's dtype: nothing changes.
  CHECK(as_floats(mul(x, zero_dim(1.004, kBFloat16))) == std::vector<float>{101.f, 3.03125f, 7.0625f});
}

TEST_CASE("the gradient of a 0-d float32 factor of a bf16 tensor is still the summed product") {
  const Tensor x = bf16_values({100.f, 3.f, 7.f}).requires_grad_();
  const Tensor scale = zero_dim(1.004, kFloat32).requires_grad_();
  sum(mul(x, scale)).backward();
  REQUIRE(scale.grad().dtype() == kFloat32);
  CHECK(scale.grad().item() == 110.0);  // sum(x): the values and their sum are exact in bf16
  REQUIRE(x.grad().dtype() == kBFloat16);
  CHECK(as_floats(x.grad()) == std::vector<float>{1.0078125f, 1.0078125f, 1.0078125f});  // 1.004 in bf16
}

}  // namespace test_zero_dim_promotion
