// matmul, mm, bmm and linear against float64 loops: transposed, sliced and broadcast operands,
// 1-D promotion, the tiled path for big products, 16-bit inputs, size-0 dims, error messages and
// gradients by finite differences.
#include <doctest/doctest.h>

#include "numeric_check.h"

namespace test_linalg {

using namespace ember;
using namespace ember::testing;

namespace {

// PyTorch matmul semantics with plain loops: 1-D operands gain a dim, batch dims broadcast.
std::vector<double> reference_matmul(const Tensor& a, const Tensor& b) {
  Dims a_sizes = a.sizes(), b_sizes = b.sizes();
  if (a_sizes.size() == 1) a_sizes = {1, a_sizes[0]};
  if (b_sizes.size() == 1) b_sizes = {b_sizes[0], 1};
  const int64_t m = a_sizes[a_sizes.size() - 2], k = a_sizes.back(), n = b_sizes.back();
  const Dims a_batch(std::span<const int64_t>(a_sizes.begin(), a_sizes.size() - 2));
  const Dims b_batch(std::span<const int64_t>(b_sizes.begin(), b_sizes.size() - 2));
  const Dims batch = broadcast_shapes(a_batch, b_batch, "reference");
  const std::vector<double> av = values_of(a), bv = values_of(b);
  // Flat batch index of an operand whose batch dims broadcast to `batch`.
  auto source = [&](const std::vector<int64_t>& index, const Dims& own) {
    int64_t flat = 0;
    for (int d = 0; d < own.size(); ++d) flat = flat * own[d] + (own[d] == 1 ? 0 : index[batch.size() - own.size() + d]);
    return flat;
  };
  std::vector<double> out;
  for (int64_t flat = 0; flat < batch.product(); ++flat) {
    const std::vector<int64_t> index = unravel(flat, batch);
    const int64_t a_base = source(index, a_batch) * m * k, b_base = source(index, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double total = 0;
        for (int64_t p = 0; p < k; ++p) total += av[a_base + i * k + p] * bv[b_base + p * n + j];
        out.push_back(total);
      }
  }
  return out;
}

// x [*, in] W^T + b with loops.
std::vector<double> reference_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const int64_t in = w.sizes()[1], out = w.sizes()[0], rows = x.numel() / in;
  const std::vector<double> xv = values_of(x), wv = values_of(w);
  const std::vector<double> bv = bias.defined() ? values_of(bias) : std::vector<double>(out, 0.0);
  std::vector<double> result;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double total = bv[o];
      for (int64_t i = 0; i < in; ++i) total += xv[r * in + i] * wv[o * in + i];
      result.push_back(total);
    }
  return result;
}

// The same logical rows x cols matrix stored row-major, column-major (a transpose) and with no
// unit stride at all (every other row and column of a bigger matrix: the copy path).
std::vector<Tensor> matrix_layouts(int64_t rows, int64_t cols, uint32_t seed, DType dtype) {
  return {random_tensor({rows, cols}, seed, dtype), random_tensor({cols, rows}, seed + 1, dtype).t(),
          random_tensor({2 * rows, 2 * cols}, seed + 2, dtype).slice(0, 0, 2 * rows, 2).slice(1, 0, 2 * cols, 2)};
}

}  // namespace

TEST_CASE("mm reads row-major, column-major and unit-stride-free operands correctly") {
  for (DType dtype : {kFloat32, kFloat64}) {
    const double tolerance = dtype == kFloat32 ? 2e-5 : 1e-12;
    for (const Tensor& a : matrix_layouts(5, 7, 20, dtype)) {
      for (const Tensor& b : matrix_layouts(7, 6, 30, dtype)) {
        INFO(dtype_name(dtype) << " a strides " << a.strides().str() << " b strides " << b.strides().str());
        const Tensor product = mm(a, b);
        CHECK(product.sizes() == Dims{5, 6});
        CHECK(product.dtype() == dtype);
        check_close(product, reference_matmul(a, b), tolerance);
        check_close(matmul(a, b), reference_matmul(a, b), tolerance);
      }
    }
  }
}

TEST_CASE("matmul follows PyTorch for 1-D, batched and broadcast operands") {
  struct Case {
    Dims a, b, expected;
  };
  const std::vector<Case> cases{
      {{4}, {4}, {}},                    {{4}, {4, 3}, {3}},         {{3, 4}, {4}, {3}},
      {{2, 3, 4}, {4, 5}, {2, 3, 5}},    {{3, 4}, {2, 4, 5}, {2, 3, 5}}, {{4}, {2, 4, 5}, {2, 5}},
      {{2, 3, 4}, {4}, {2, 3}},          {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}}, {{1, 3, 4}, {6, 4, 1}, {6, 3, 1}},
      {{2, 3, 1, 4}, {4, 1}, {2, 3, 1, 1}}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    INFO("a " << c.a.str() << " b " << c.b.str());
    const Tensor a = random_tensor(c.a, seed++);
    const Tensor b = random_tensor(c.b, seed++);
    const Tensor product = matmul(a, b);
    CHECK(product.sizes() == c.expected);
    check_close(product, reference_matmul(a, b), 1e-12);
  }
  // Batch dims that cannot fold into rows (a permuted batch) and transposed batched operands.
  const Tensor permuted = random_tensor({3, 2, 4}, 60).permute({1, 0, 2});  // [2, 3, 4]
  const Tensor rhs = random_tensor({4, 5}, 61);
  check_close(matmul(permuted, rhs), reference_matmul(permuted, rhs), 1e-12);
  const Tensor left = random_tensor({2, 4, 3}, 62).transpose(1, 2);  // [2, 3, 4], column-major matrices
  const Tensor right = random_tensor({2, 5, 4}, 63).transpose(1, 2);  // [2, 4, 5]
  check_close(bmm(left, right), reference_matmul(left, right), 1e-12);
  check_close(matmul(left, right.slice(0, 1, 2)), reference_matmul(left, right.slice(0, 1, 2)), 1e-12);
}

TEST_CASE("linear computes x W^T + b for any leading dims and layouts") {
  const Tensor weight = random_tensor({6, 7}, 70);
  const Tensor bias = random_tensor({6}, 71);
  const Tensor x = random_tensor({4, 3, 7}, 72);
  CHECK(linear(x, weight, bias).sizes() == Dims{4, 3, 6});
  check_close(linear(x, weight, bias), reference_linear(x, weight, bias), 1e-12);
  check_close(linear(x, weight), reference_linear(x, weight, Tensor()), 1e-12);
  const Tensor vector = random_tensor({7}, 73);
  CHECK(linear(vector, weight, bias).sizes() == Dims{6});
  check_close(linear(vector, weight, bias), reference_linear(vector, weight, bias), 1e-12);
  // Transposed weight (stride (1, 6)), leading dims that do not merge, a column-strided input,
  // a strided bias.
  const Tensor weight_t = random_tensor({7, 6}, 74).t();
  const Tensor x_swapped = random_tensor({3, 4, 7}, 75).transpose(0, 1);
  const Tensor x_strided = random_tensor({4, 14}, 76).slice(1, 0, 14, 2);
  const Tensor bias_strided = random_tensor({12}, 77).slice(0, 0, 12, 2);
  check_close(linear(x_swapped, weight_t, bias), reference_linear(x_swapped, weight_t, bias), 1e-12);
  check_close(linear(x_strided, weight, bias_strided), reference_linear(x_strided, weight, bias_strided), 1e-12);
  // float32: the benchmark's first layer shape.
  const Tensor x32 = random_tensor({32, 100}, 78, kFloat32);
  const Tensor w32 = random_tensor({256, 100}, 79, kFloat32);
  const Tensor b32 = random_tensor({256}, 80, kFloat32);
  check_close(linear(x32, w32, b32), reference_linear(x32, w32, b32), 2e-5);
}

TEST_CASE("big products are tiled and give the same bits for any thread count") {
  const Tensor a = random_tensor({300, 200}, 90, kFloat32);
  const Tensor b = random_tensor({200, 300}, 91, kFloat32).t().contiguous().t();  // column-major
  const Tensor bias = random_tensor({300}, 92, kFloat32);
  const int threads = get_num_threads();
  set_num_threads(1);
  const std::vector<float> single = mm(a, b).to_vector<float>();
  const std::vector<float> single_linear = linear(a, b.t(), bias).to_vector<float>();
  set_num_threads(4);
  const std::vector<float> several = mm(a, b).to_vector<float>();
  const std::vector<float> several_linear = linear(a, b.t(), bias).to_vector<float>();
  set_num_threads(threads);
  CHECK(single == several);
  CHECK(single_linear == several_linear);
  check_close(std::vector<double>(single.begin(), single.end()), reference_matmul(a, b), 1e-4);
  const Tensor batched_a = random_tensor({6, 64, 96}, 93, kFloat32);
  const Tensor batched_b = random_tensor({96, 80}, 94, kFloat32);
  check_close(matmul(batched_a, batched_b.expand({6, 96, 80})), reference_matmul(batched_a, batched_b), 1e-4);
}

TEST_CASE("16-bit matmul and linear compute in float32") {
  for (DType dtype : {kBFloat16, kFloat16}) {
    const Tensor a = random_tensor({8, 16}, 100, dtype);
    const Tensor b = random_tensor({16, 4}, 101, dtype);
    const Tensor product = matmul(a, b);
    CHECK(product.dtype() == dtype);
    check_close(product, reference_matmul(a, b), 3e-2);
    const Tensor bias = random_tensor({8}, 102, dtype);
    check_close(linear(b.t(), a, bias), reference_linear(b.t(), a, bias), 3e-2);
  }
}

TEST_CASE("size-0 dims: an empty contraction gives zeros (or the bias)") {
  const Tensor a = zeros({3, 0}, {.dtype = kFloat64});
  const Tensor b = zeros({0, 4}, {.dtype = kFloat64});
  CHECK(mm(a, b).to_vector<double>() == std::vector<double>(12, 0.0));
  const Tensor bias = random_tensor({4}, 110);
  const std::vector<double> bias_values = values_of(bias);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) expected.insert(expected.end(), bias_values.begin(), bias_values.end());
  check_close(linear(a, b.t(), bias), expected, 0.0);
  CHECK(mm(zeros({0, 5}), random_tensor({5, 2}, 111, kFloat32)).sizes() == Dims{0, 2});
  CHECK(bmm(zeros({0, 2, 3}), zeros({0, 3, 4})).sizes() == Dims{0, 2, 4});
  CHECK(matmul(random_tensor({1, 1}, 112), random_tensor({1}, 113)).sizes() == Dims{1});
}

TEST_CASE("matrix products report bad shapes and dtypes with the values involved") {
  CHECK_THROWS_WITH_AS(linear(zeros({32, 100}), zeros({256, 128})),
                       doctest::Contains("linear: input has 100 features but weight expects 128 (input [32, 100], weight [256, 128])"),
                       Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 4}), zeros({3, 4}), zeros({2})),
                       doctest::Contains("linear: bias must be 1-D with 3 elements"), Error);
  CHECK_THROWS_WITH_AS(mm(zeros({2, 3}), zeros({4, 5})),
                       doctest::Contains("mm: shapes [2, 3] and [4, 5] cannot be multiplied (3 columns vs 4 rows)"), Error);
  CHECK_THROWS_WITH_AS(mm(zeros({2, 3, 1}), zeros({1, 5})), doctest::Contains("mm: expected 2-D matrices"), Error);
  CHECK_THROWS_WITH_AS(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})), doctest::Contains("bmm: batch sizes differ: 2 vs 3"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(scalar_tensor(1.0), zeros({3})),
                       doctest::Contains("matmul: both operands need at least one dim"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({3, 2}, {.dtype = kFloat64})),
                       doctest::Contains("matmul: expected operands of one dtype, got float32 and float64"), Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 2, 3}), zeros({3, 3, 2})), doctest::Contains("matmul: shapes [2] and [3]"),
                       Error);
  CHECK_THROWS_WITH_AS(mm(zeros({2, 2}, {.dtype = kBool}), zeros({2, 2}, {.dtype = kBool})),
                       doctest::Contains("mm: expected floating-point or integer operands, got bool"), Error);
}

TEST_CASE("gradients of mm, bmm, matmul and linear match finite differences") {
  gradcheck([](const std::vector<Tensor>& x) { return mm(x[0], x[1].t()); },
            {random_tensor({3, 4}, 120), random_tensor({5, 4}, 121)});
  gradcheck([](const std::vector<Tensor>& x) { return bmm(x[0], x[1].transpose(1, 2)); },
            {random_tensor({2, 3, 4}, 122), random_tensor({2, 5, 4}, 123)});
  const std::vector<std::pair<Dims, Dims>> shapes{{{4}, {4}},       {{4}, {4, 3}},       {{3, 4}, {4}},
                                                  {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}}, {{4}, {2, 4, 5}},
                                                  {{2, 3, 4}, {4}},  {{2, 1, 3, 4}, {5, 4, 2}}};
  uint32_t seed = 130;
  for (const auto& [a, b] : shapes) {
    INFO("a " << a.str() << " b " << b.str());
    gradcheck([](const std::vector<Tensor>& x) { return matmul(x[0], x[1]); },
              {random_tensor(a, seed++), random_tensor(b, seed++)});
  }
  const std::vector<Tensor> params{random_tensor({2, 3, 4}, 150), random_tensor({5, 4}, 151), random_tensor({5}, 152)};
  gradcheck([](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); }, params);
  gradcheck([](const std::vector<Tensor>& x) { return linear(x[0].transpose(0, 1), x[1]); }, {params[0], params[1]});
  gradcheck([](const std::vector<Tensor>& x) { return linear(x[0], x[1], x[2]); },
            {random_tensor({4}, 153), params[1], params[2]});
}

}  // namespace test_linalg
