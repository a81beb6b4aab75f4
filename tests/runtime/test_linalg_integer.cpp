// Integer matrix products on the CPU (int32 and int64, as PyTorch's CPU): matmul's 1-D,
// batched and broadcast forms, mm, bmm and linear over transposed and stepped operands against
// float64 loops (values small enough to be exact there), wrap-around in each dtype, empty
// contractions, and the refusals (bool, a mixed pair, an activation on integers).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>

#include "numeric_check.h"

namespace test_linalg_integer {

using namespace ember;
using namespace ember::testing;

namespace {

// Whole numbers in [-50, 50): every product and sum below stays exact in double.
Tensor small_integers(const Dims& sizes, uint64_t seed, DType dtype) {
  manual_seed(seed);
  return randint(-50, 50, sizes, {.dtype = dtype});
}

// The product computed in float64 and rounded back: the reference when nothing wraps.
void check_exact(const Tensor& actual, const Tensor& a, const Tensor& b) {
  const Tensor expected = matmul(a.to(kFloat64), b.to(kFloat64));
  CHECK(actual.dtype() == a.dtype());
  CHECK(actual.sizes() == expected.sizes());
  CHECK(values_of(actual) == values_of(expected));
}

}  // namespace

TEST_CASE("integer matmul follows PyTorch's shapes exactly, for int32 and int64") {
  const std::vector<std::pair<Dims, Dims>> shapes{{{4}, {4}},          {{4}, {4, 3}},       {{3, 4}, {4}},
                                                  {{3, 4}, {4, 5}},    {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}},
                                                  {{2, 1, 3, 4}, {5, 4, 2}}, {{2, 3, 4}, {4}}};
  for (DType dtype : {kInt32, kInt64}) {
    uint64_t seed = 10;
    for (const auto& [a_sizes, b_sizes] : shapes) {
      INFO(dtype << " a " << a_sizes.str() << " b " << b_sizes.str());
      const Tensor a = small_integers(a_sizes, seed++, dtype), b = small_integers(b_sizes, seed++, dtype);
      check_exact(matmul(a, b), a, b);
    }
  }
}

TEST_CASE("integer mm, bmm and linear read transposed and stepped operands in place of copies") {
  const Tensor a = small_integers({8, 6}, 1, kInt64), b = small_integers({10, 12}, 2, kInt64);
  const Tensor a_t = a.t();                                          // [6, 8], row stride 1
  const Tensor b_stepped = b.slice(0, 0, 10, 2).slice(1, 0, 12, 2);  // [5, 6], no unit stride
  check_exact(mm(b_stepped, a_t), b_stepped, a_t);
  const Tensor batch_a = small_integers({3, 4, 5}, 3, kInt32), batch_b = small_integers({3, 6, 5}, 4, kInt32);
  check_exact(bmm(batch_a, batch_b.transpose(1, 2)), batch_a, batch_b.transpose(1, 2));

  const Tensor x = small_integers({2, 3, 4}, 5, kInt64), w = small_integers({5, 4}, 6, kInt64);
  const Tensor bias = small_integers({5}, 7, kInt64);
  const Tensor expected = add(matmul(x.to(kFloat64), w.to(kFloat64).t()), bias.to(kFloat64));
  const Tensor out = linear(x, w, bias);
  CHECK(out.dtype() == kInt64);
  CHECK(out.sizes() == Dims{2, 3, 5});
  CHECK(values_of(out) == values_of(expected));
  const Tensor no_bias = linear(x.transpose(0, 1), w);  // [3, 2, 4], not contiguous
  CHECK(values_of(no_bias) == values_of(matmul(x.transpose(0, 1).to(kFloat64), w.to(kFloat64).t())));
}

TEST_CASE("integer products wrap around in their own dtype, as PyTorch's") {
  // 65536 * 65536 = 2^32: 0 in int32, itself in int64.
  const Tensor big32 = full({1, 1}, 65536, {.dtype = kInt32});
  CHECK(mm(big32, big32).item<int32_t>() == 0);
  const Tensor big64 = full({1, 1}, 65536, {.dtype = kInt64});
  CHECK(mm(big64, big64).item<int64_t>() == (int64_t{1} << 32));
  // 3 * 2^62 = 2^63 + 2^62 wraps to -2^62 in int64; sums wrap too: 2^62 * 2 + 2^62 * 2 = 2^64 -> 0.
  const Tensor row = full({1, 2}, std::ldexp(1.0, 62), {.dtype = kInt64});
  CHECK(mm(full({1, 1}, 3, {.dtype = kInt64}), row.slice(1, 0, 1)).item<int64_t>() == -(int64_t{1} << 62));
  CHECK(mm(row, full({2, 1}, 2, {.dtype = kInt64})).item<int64_t>() == 0);
  // int32: 2^30 * 3 + 2^30 = 2^32 -> 0; the same in int64 keeps it.
  const Tensor left = full({1, 2}, 1 << 30, {.dtype = kInt32});
  const Tensor right = from_vector(std::vector<int32_t>{3, 1}, {2, 1}, {.dtype = kInt32});
  CHECK(mm(left, right).item<int32_t>() == 0);
  CHECK(mm(left.to(kInt64), right.to(kInt64)).item<int64_t>() == (int64_t{1} << 32));
}

TEST_CASE("integer products over an empty contraction are zeros, or the bias") {
  const Tensor a = zeros({3, 0}, {.dtype = kInt64}), b = zeros({0, 2}, {.dtype = kInt64});
  CHECK(values_of(mm(a, b)) == std::vector<double>(6, 0.0));
  const Tensor bias = from_vector(std::vector<int32_t>{7, -8}, {2}, {.dtype = kInt32});
  const Tensor out = linear(zeros({3, 0}, {.dtype = kInt32}), zeros({2, 0}, {.dtype = kInt32}), bias);
  CHECK(out.sizes() == Dims{3, 2});
  CHECK(values_of(out) == std::vector<double>{7, -8, 7, -8, 7, -8});
  CHECK(mm(zeros({0, 4}, {.dtype = kInt32}), zeros({4, 2}, {.dtype = kInt32})).sizes() == Dims{0, 2});
}

TEST_CASE("integer products refuse bool, mixed dtypes and a fused activation, naming the op") {
  const Tensor flags = ones({2, 2}, {.dtype = kBool});
  CHECK_THROWS_WITH_AS(mm(flags, flags), doctest::Contains("mm: expected floating-point or integer operands, got bool"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(ones({2, 2}, {.dtype = kInt32}), ones({2, 2}, {.dtype = kInt64})),
                       doctest::Contains("matmul: expected operands of one dtype, got int32 and int64"), Error);
  CHECK_THROWS_WITH_AS(matmul(ones({2, 2}, {.dtype = kInt64}), ones({2, 2})),
                       doctest::Contains("matmul: expected operands of one dtype, got int64 and float32"), Error);
  static const OpDef& op = lookup_op("linear");
  const Tensor x = ones({2, 3}, {.dtype = kInt64}), w = ones({4, 3}, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(dispatch_one(op, {x, w, Tensor()}, {{"activation", int64_t{1}}}),
                       doctest::Contains("linear: a fused activation needs floating-point operands, got int64"), Error);
}

}  // namespace test_linalg_integer
