// The register-blocked small GEMM (kernels/cpu/small_gemm.cpp) against float64 loops: every
// operand layout (row- and column-major, padded or not, no unit stride, broadcast), K from 0 to
// 100, odd M and N, with and without bias, float and double; and the ops that reach it (linear
// with each fused activation, bmm with broadcast batches) including thread-count independence.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "kernels/cpu/small_gemm.h"
#include "matrix_layouts.h"
#include "numeric_check.h"

namespace test_small_gemm {

using namespace ember;
using namespace ember::testing;

namespace {

// The BLAS layouts plus two only small_gemm takes: no unit stride (it copies) and broadcast rows.
std::vector<Layout> layouts(int64_t rows, int64_t cols) {
  std::vector<Layout> all = blas_layouts(rows, cols);
  all.push_back({"no unit stride", 2 * cols + 1, 2, rows * (2 * cols + 1)});
  all.push_back({"rows broadcast", 0, 1, cols});  // every row is the same row, as after expand
  return all;
}

// C = A B (+ bias) with double loops over logical elements.
std::vector<double> reference_product(const std::vector<double>& a, Layout a_layout, const std::vector<double>& b,
                                      Layout b_layout, const std::vector<double>& bias, int64_t m, int64_t n,
                                      int64_t k) {
  std::vector<double> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double total = bias.empty() ? 0.0 : bias[j];
      for (int64_t p = 0; p < k; ++p)
        total += a[i * a_layout.row_stride + p * a_layout.col_stride] * b[p * b_layout.row_stride + j * b_layout.col_stride];
      c[i * n + j] = total;
    }
  return c;
}

// Runs small_gemm<T> into a C whose rows are padded by 3 elements, all pre-filled with NaN:
// every logical element must be written, no padding element touched.
template <typename T>
void check_small_gemm(int64_t m, int64_t n, int64_t k, Layout a_layout, Layout b_layout, bool with_bias,
                      uint32_t seed) {
  const std::vector<double> a = random_values(std::max<int64_t>(a_layout.buffer_size, 1), seed);
  const std::vector<double> b = random_values(std::max<int64_t>(b_layout.buffer_size, 1), seed + 1);
  const std::vector<double> bias = with_bias ? random_values(n, seed + 2) : std::vector<double>{};
  const std::vector<T> a_values(a.begin(), a.end()), b_values(b.begin(), b.end()), bias_values(bias.begin(), bias.end());
  const int64_t c_row_stride = n + 3;
  std::vector<T> c(static_cast<size_t>(m * c_row_stride), std::numeric_limits<T>::quiet_NaN());
  cpu::small_gemm<T>({a_values.data(), a_layout.row_stride, a_layout.col_stride},
                     {b_values.data(), b_layout.row_stride, b_layout.col_stride}, c.data(), c_row_stride, m, n, k,
                     with_bias ? bias_values.data() : nullptr);
  // The reference reads the rounded inputs, so only the product's own rounding differs.
  const std::vector<double> expected = reference_product(std::vector<double>(a_values.begin(), a_values.end()), a_layout,
                                                         std::vector<double>(b_values.begin(), b_values.end()),
                                                         b_layout, std::vector<double>(bias_values.begin(), bias_values.end()), m, n, k);
  std::vector<double> actual;
  int64_t padding_written = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) actual.push_back(c[i * c_row_stride + j]);
    for (int64_t j = n; j < c_row_stride; ++j) padding_written += std::isnan(c[i * c_row_stride + j]) ? 0 : 1;
  }
  const double tolerance = sizeof(T) == 4 ? 4e-6 * std::max<int64_t>(k, 1) : 1e-14 * std::max<int64_t>(k, 1);
  check_close(actual, expected, tolerance);
  CHECK(padding_written == 0);
}

double gelu_reference(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_reference(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

// M and N run past several vectors of every width the build may use (4, 8 or 16 floats; 2, 4 or
// 8 doubles) with a partial one after them, in both the direct and the transposed plan.
TEST_CASE("small_gemm matches float64 loops for every layout, K from 0 to 100, odd M and N, bias or not") {
  uint32_t seed = 1000;
  for (int64_t m : {1, 5, 13, 37}) {
    for (int64_t n : {1, 7, 17, 33, 71}) {
      for (int64_t k : {0, 1, 3, 10, 32, 100}) {
        for (const Layout& a_layout : layouts(m, k)) {
          for (const Layout& b_layout : layouts(k, n)) {
            for (bool with_bias : {false, true}) {
              INFO("m " << m << " n " << n << " k " << k << " a " << a_layout.name << " b " << b_layout.name
                        << (with_bias ? " with bias" : ""));
              check_small_gemm<float>(m, n, k, a_layout, b_layout, with_bias, seed);
              check_small_gemm<double>(m, n, k, a_layout, b_layout, with_bias, seed);
              seed += 3;
            }
          }
        }
      }
    }
  }
}

TEST_CASE("small_gemm on the seed MLP's products, both orientations, float and double") {
  // [32,100] x W^T (computed transposed), [32,256] x W2^T (the copied narrow right operand),
  // K = 10 and 32 backward products with a transposed left operand.
  struct Shape {
    int64_t m, n, k;
    bool a_column_major, b_column_major;
  };
  uint32_t seed = 5000;
  for (const Shape& shape : {Shape{32, 256, 100, false, true}, Shape{32, 10, 256, false, true},
                             Shape{32, 256, 10, false, false}, Shape{10, 256, 32, true, false},
                             Shape{256, 100, 32, true, false}}) {
    const Layout a = shape.a_column_major ? layouts(shape.m, shape.k)[1] : layouts(shape.m, shape.k)[0];
    const Layout b = shape.b_column_major ? layouts(shape.k, shape.n)[1] : layouts(shape.k, shape.n)[0];
    for (bool with_bias : {false, true}) {
      INFO("m " << shape.m << " n " << shape.n << " k " << shape.k << (with_bias ? " with bias" : ""));
      check_small_gemm<float>(shape.m, shape.n, shape.k, a, b, with_bias, seed);
      check_small_gemm<double>(shape.m, shape.n, shape.k, a, b, with_bias, seed++);
    }
  }
}

TEST_CASE("linear with a fused activation on small products matches float64 loops") {
  struct Shape {
    int64_t rows, in, out;
  };
  uint32_t seed = 7000;
  for (DType dtype : {kFloat32, kFloat64}) {
    const double tolerance = dtype == kFloat32 ? 5e-5 : 1e-12;
    for (const Shape& shape : {Shape{32, 100, 256}, Shape{7, 10, 5}, Shape{3, 1, 9}}) {
      const Tensor x = random_tensor({shape.rows, shape.in}, seed++, dtype);
      const Tensor weight = random_tensor({shape.out, shape.in}, seed++, dtype);
      const Tensor bias = random_tensor({shape.out}, seed++, dtype);
      for (bool with_bias : {false, true}) {
        const Tensor used_bias = with_bias ? bias : Tensor();
        std::vector<double> pre(static_cast<size_t>(shape.rows * shape.out));
        const std::vector<double> xv = values_of(x), wv = values_of(weight), bv = values_of(bias);
        for (int64_t r = 0; r < shape.rows; ++r)
          for (int64_t o = 0; o < shape.out; ++o) {
            double total = with_bias ? bv[o] : 0.0;
            for (int64_t i = 0; i < shape.in; ++i) total += xv[r * shape.in + i] * wv[o * shape.in + i];
            pre[r * shape.out + o] = total;
          }
        for (Activation activation : {Activation::None, Activation::Relu, Activation::Gelu, Activation::GeluTanh}) {
          INFO(dtype_name(dtype) << " rows " << shape.rows << " in " << shape.in << " out " << shape.out << " "
                                 << activation_name(activation) << (with_bias ? " with bias" : ""));
          std::vector<double> expected = pre;
          for (double& value : expected) {
            if (activation == Activation::Relu) value = std::max(value, 0.0);
            if (activation == Activation::Gelu) value = gelu_reference(value);
            if (activation == Activation::GeluTanh) value = gelu_tanh_reference(value);
          }
          const Tensor result = linear(x, weight, used_bias, activation);
          CHECK(result.dtype() == dtype);
          check_close(result, expected, tolerance);
          // The input transposed in memory (column-major) reaches the other plan of the kernel.
          const Tensor x_column_major = x.t().contiguous().t();
          check_close(linear(x_column_major, weight, used_bias, activation), expected, tolerance);
        }
      }
    }
  }
}

TEST_CASE("bmm of small matrices with a broadcast batch gives the same bits for any thread count") {
  const Tensor a = random_tensor({6, 9, 20}, 8000, kFloat32);
  const Tensor b = random_tensor({20, 11}, 8001, kFloat32).t().contiguous().t().expand({6, 20, 11});
  const int threads = get_num_threads();
  set_num_threads(1);
  const std::vector<float> single = bmm(a, b).to_vector<float>();
  set_num_threads(4);
  const std::vector<float> several = bmm(a, b).to_vector<float>();
  set_num_threads(threads);
  CHECK(single == several);
  std::vector<double> expected;
  const std::vector<double> av = values_of(a), bv = values_of(b);
  for (int64_t batch = 0; batch < 6; ++batch)
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t j = 0; j < 11; ++j) {
        double total = 0.0;
        for (int64_t p = 0; p < 20; ++p) total += av[(batch * 9 + i) * 20 + p] * bv[(batch * 20 + p) * 11 + j];
        expected.push_back(total);
      }
  check_close(std::vector<double>(single.begin(), single.end()), expected, 5e-5);
}

}  // namespace test_small_gemm
