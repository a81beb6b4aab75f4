// In-place add_ and mul_ with an operand of a wider dtype (a float16 tensor += a float32 one, a
// float32 tensor *= a float64 one) compute in the promoted dtype and round the result once into
// the target, as PyTorch does. Rounding the operand to the target's dtype first turns a float32
// 1e5 into float16 inf and loses the bits that decide a bfloat16 tie.
// Expected values: numpy, float32 (float64) arithmetic of the stored inputs, then np.float16 of the
// result, or bf16 by round-to-nearest-even of the float32 bits. The comments give the value the
// operand rounded first would produce.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"

namespace test_inplace_promotion {

using namespace ember;

namespace {

const TensorOptions kOnCpu{.device = kCPU};

Tensor values(std::vector<float> numbers, DType dtype) {
  const int64_t count = static_cast<int64_t>(numbers.size());
  return from_vector(numbers, {count}, kOnCpu).to(dtype);
}

std::vector<double> as_doubles(const Tensor& tensor) { return tensor.to(kFloat64).to_vector<double>(); }

}  // namespace

TEST_CASE("in-place add_ and mul_ into float16 compute with a float32 operand in float32") {
  Tensor scaled = full({3}, 0.001, {.dtype = kFloat16, .device = kCPU});  // 0.00100040435791015625
  scaled.mul_(values({1e5f, 7e4f, 3e4f}, kFloat32));
  CHECK(scaled.dtype() == kFloat16);
  CHECK(as_doubles(scaled) == std::vector<double>{100.0625, 70.0, 30.015625});  // inf, inf, 30.015625

  Tensor shifted = full({2}, 60000.0, {.dtype = kFloat16, .device = kCPU});
  shifted += values({-59000.f, -70000.f}, kFloat32);
  CHECK(as_doubles(shifted) == std::vector<double>{1000.0, -10000.0});  // 992, -inf

  Tensor stepped = full({1}, 60000.0, {.dtype = kFloat16, .device = kCPU});
  stepped.add_(values({35000.f}, kFloat32), -2.0);  // alpha scales the float32 operand in float32
  CHECK(as_doubles(stepped) == std::vector<double>{-10000.0});  // -10016: 35000 is 35008 in float16
}

TEST_CASE("in-place ops into bfloat16 keep the float32 or float16 operand's low bits until the one rounding") {
  Tensor sum = ones({1}, {.dtype = kBFloat16, .device = kCPU});
  sum.add_(values({0.00390625f + 0x1p-20f}, kFloat32));  // 2^-8 + 2^-20: just above the tie
  CHECK(as_doubles(sum) == std::vector<double>{1.0078125});  // 1: 2^-8 alone ties to even

  Tensor product = full({1}, 3.0, {.dtype = kBFloat16, .device = kCPU});
  product.mul_(values({1.0f + 0x1p-8f + 0x1p-12f}, kFloat32));
  CHECK(as_doubles(product) == std::vector<double>{3.015625});  // 3.03125

  // bfloat16 with float16 promotes to float32, as result_type says.
  Tensor mixed = ones({1}, {.dtype = kBFloat16, .device = kCPU});
  mixed.add_(values({0.00390625f + 0x1p-18f}, kFloat16));  // exact in float16
  CHECK(as_doubles(mixed) == std::vector<double>{1.0078125});  // 1
}

TEST_CASE("in-place ops into float32 with a float64 operand compute in float64") {
  Tensor sum = ones({1}, kOnCpu);
  sum.add_(from_vector(std::vector<double>{0x1p-24 + 0x1p-50}, {1}, kOnCpu));
  CHECK(sum.to_vector<float>() == std::vector<float>{1.0f + 0x1p-23f});  // 1: 2^-24 alone ties to even

  Tensor product = full({1}, 0x1p-100, kOnCpu);
  product.mul_(from_vector(std::vector<double>{0x1p130}, {1}, kOnCpu));
  CHECK(product.to_vector<float>() == std::vector<float>{0x1p30f});  // inf: 2^130 is past float32's range
}

TEST_CASE("in-place promotion through strided targets and broadcast operands") {
  // A transposed float16 target (the staged loop) times a broadcast float32 row.
  const Tensor base = full({3, 2}, 0.001, {.dtype = kFloat16, .device = kCPU});
  Tensor target = base.t();
  target.mul_(values({1e5f, 7e4f, 3e4f}, kFloat32));
  CHECK(as_doubles(base) == std::vector<double>{100.0625, 100.0625, 70.0, 70.0, 30.015625, 30.015625});
  // int32 += int64 computes in int64 and wraps into int32, as PyTorch's static_cast does.
  Tensor counts = from_vector(std::vector<int32_t>{2147483647, 5}, {2}, kOnCpu);
  counts.add_(from_vector(std::vector<int64_t>{-4294967295, 4294967296}, {2}, kOnCpu));
  CHECK(counts.to_vector<int32_t>() == std::vector<int32_t>{-2147483647 - 1, 5});
}

TEST_CASE("a float32 residual added in place to a float16 autocast result is rounded once") {
  const Tensor x = from_vector(std::vector<float>{1.0f}, {1, 1}, kOnCpu);
  const Tensor weight = from_vector(std::vector<float>{-60000.0f, 0.5f}, {2, 1}, kOnCpu);
  const Tensor residual = from_vector(std::vector<float>{70000.0f, 0x1p-12f + 0x1p-24f}, {1, 2}, kOnCpu);
  Tensor h;
  {
    AutocastGuard autocast(kFloat16);
    h = linear(x, weight);  // float16 [[-60000, 0.5]]
    h += residual;
  }
  REQUIRE(h.dtype() == kFloat16);
  CHECK(as_doubles(h) == std::vector<double>{10000.0, 0.50048828125});  // inf, 0.5
}

}  // namespace test_inplace_promotion
