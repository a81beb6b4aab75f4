// The library behind big CPU products (kernels/cpu/gemm_library.h), each of OpenBLAS and Eigen
// against float64 loops: every operand layout, size-1 dims with arbitrary strides, overwrite and
// accumulate, float and double. Through OpenBLAS, products give the same bits for any thread
// count, including the untiled ones OpenBLAS would otherwise split across threads itself, and
// leave the caller's OpenMP setting as it was.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

#include "kernels/cpu/gemm_library.h"
#include "kernels/cpu/openblas_library.h"
#include "matrix_layouts.h"
#include "numeric_check.h"
#include "skip_case.h"

namespace test_gemm_library {

using namespace ember;
using namespace ember::testing;
using cpu::GemmLibrary;

namespace {

std::vector<GemmLibrary> libraries() {
  std::vector<GemmLibrary> found{GemmLibrary::Eigen};
  if (cpu::openblas_available()) found.push_back(GemmLibrary::OpenBlas);
  return found;
}

// Restores the process's library when a test case ends, passed or not.
struct LibraryScope {
  GemmLibrary saved = cpu::gemm_library();
  explicit LibraryScope(GemmLibrary library) { cpu::set_gemm_library(library); }
  ~LibraryScope() { cpu::set_gemm_library(saved); }
};

// C (rows padded by 2, padding NaN) = A B, or C += A B over random C, against double loops.
template <typename T>
void check_tile(int64_t m, int64_t n, int64_t k, Layout a_layout, Layout b_layout, bool accumulate, uint32_t seed) {
  const std::vector<double> a = random_values(a_layout.buffer_size, seed);
  const std::vector<double> b = random_values(b_layout.buffer_size, seed + 1);
  const std::vector<double> start = random_values(m * n, seed + 2);
  const std::vector<T> a_values(a.begin(), a.end()), b_values(b.begin(), b.end());
  const int64_t c_row_stride = n + 2;
  std::vector<T> c(static_cast<size_t>(m * c_row_stride), std::numeric_limits<T>::quiet_NaN());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * c_row_stride + j] = accumulate ? static_cast<T>(start[i * n + j]) : T{0};
  cpu::tile_product<T>({a_values.data(), a_layout.row_stride, a_layout.col_stride},
                       {b_values.data(), b_layout.row_stride, b_layout.col_stride}, c.data(), c_row_stride, m, n, k,
                       accumulate);
  std::vector<double> actual, expected;
  int64_t padding_written = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double total = accumulate ? static_cast<double>(static_cast<T>(start[i * n + j])) : 0.0;
      for (int64_t p = 0; p < k; ++p)
        total += static_cast<double>(a_values[i * a_layout.row_stride + p * a_layout.col_stride]) *
                 static_cast<double>(b_values[p * b_layout.row_stride + j * b_layout.col_stride]);
      expected.push_back(total);
      actual.push_back(c[i * c_row_stride + j]);
    }
    for (int64_t j = n; j < c_row_stride; ++j) padding_written += std::isnan(c[i * c_row_stride + j]) ? 0 : 1;
  }
  const double tolerance = sizeof(T) == 4 ? 4e-6 * static_cast<double>(k) : 1e-14 * static_cast<double>(k);
  check_close(actual, expected, tolerance);
  CHECK(padding_written == 0);
}

}  // namespace

TEST_CASE("the CPU GEMM library is OpenBLAS in builds that have it, else Eigen") {
#ifdef EMBER_EXPECT_OPENBLAS
  CHECK(cpu::openblas_available());
  CHECK(cpu::gemm_library() == GemmLibrary::OpenBlas);
#else
  CHECK_FALSE(cpu::openblas_available());
  CHECK(cpu::gemm_library() == GemmLibrary::Eigen);
  CHECK_THROWS_WITH_AS(cpu::set_gemm_library(GemmLibrary::OpenBlas),
                       doctest::Contains("set_gemm_library: OpenBLAS is not available"), Error);
#endif
}

#ifdef EMBER_EXPECT_OPENBLAS
// The core is steered only at load time (openblas_library.h); this process loads OpenBLAS on its
// first product, so what the user's environment said at start decides what to expect.
TEST_CASE("OpenBLAS runs the kernel set ember chose for this CPU and the environment is left as it was") {
  const char* user_core = std::getenv("OPENBLAS_CORETYPE");
  const std::string user_value = user_core != nullptr ? user_core : "";
  REQUIRE(cpu::openblas_functions() != nullptr);
  const std::string core = cpu::openblas_core();
  INFO("OpenBLAS core " << core << ", OPENBLAS_CORETYPE at start '" << user_value << "'");
  CHECK_FALSE(core.empty());
  const char* after = std::getenv("OPENBLAS_CORETYPE");
  CHECK(std::string(after != nullptr ? after : "") == user_value);
  // Otherwise the core is OpenBLAS's own choice or the user's, which ember leaves alone.
  if (user_core == nullptr && cpu::openblas_core_for_this_cpu() != nullptr)
    CHECK(core == cpu::openblas_core_for_this_cpu());
  CHECK(cpu::gemm_library_description() == (cpu::gemm_library() == GemmLibrary::OpenBlas ? "OpenBLAS " + core : "Eigen"));
}
#endif

// ctest runs this case alone with EMBER_OPENBLAS_LIBRARY naming a missing file; elsewhere it skips.
TEST_CASE("an OpenBLAS that cannot be opened leaves Eigen in charge and says why") {
  const char* chosen = std::getenv("EMBER_OPENBLAS_LIBRARY");
  if (chosen == nullptr || std::filesystem::exists(chosen)) {
    skip_case("needs EMBER_OPENBLAS_LIBRARY naming a missing file (ctest's 'OpenBLAS that cannot be opened')");
    return;
  }
  CHECK_FALSE(cpu::openblas_available());
  CHECK(cpu::openblas_functions() == nullptr);
  CHECK(cpu::gemm_library() == GemmLibrary::Eigen);
  CHECK(cpu::gemm_library_description() == "Eigen");
#ifdef EMBER_EXPECT_OPENBLAS
  INFO("reason: " << cpu::openblas_unavailable_reason());
  CHECK(cpu::openblas_unavailable_reason().find(chosen) != std::string::npos);
  CHECK_THROWS_WITH_AS(cpu::set_gemm_library(GemmLibrary::OpenBlas), doctest::Contains(chosen), Error);
#endif
  // Products still work, through Eigen.
  check_tile<float>(67, 130, 600, {"row-major", 600, 1, 67 * 600}, {"row-major", 130, 1, 600 * 130}, false, 5000);
}

TEST_CASE("tile products match float64 loops in each library for every layout, overwriting or accumulating") {
  uint32_t seed = 4000;
  for (GemmLibrary library : libraries()) {
    const LibraryScope scope(library);
    for (int64_t m : {1, 9, 67}) {
      for (int64_t n : {1, 20, 130}) {
        for (int64_t k : {1, 37, 600}) {
          for (const Layout& a_layout : blas_layouts(m, k)) {
            for (const Layout& b_layout : blas_layouts(k, n)) {
              for (bool accumulate : {false, true}) {
                INFO(cpu::gemm_library_name(library) << " m " << m << " n " << n << " k " << k << " a "
                                                     << a_layout.name << " b " << b_layout.name << " accumulate "
                                                     << accumulate);
                check_tile<float>(m, n, k, a_layout, b_layout, accumulate, seed);
                check_tile<double>(m, n, k, a_layout, b_layout, accumulate, seed);
                seed += 3;
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("long products with a vector operand keep their digits in each library") {
  // 2^24 + 2^22 ones: one float accumulator stalls at 2^24; blocks summed in double are exact.
  constexpr int64_t k = (int64_t{1} << 24) + (int64_t{1} << 22);
  const std::vector<float> ones(static_cast<size_t>(k), 1.0f);
  for (GemmLibrary library : libraries()) {
    const LibraryScope scope(library);
    INFO(cpu::gemm_library_name(library));
    float dot = 0.0f;
    cpu::tile_product<float>({ones.data(), k, 1}, {ones.data(), 1, 1}, &dot, 1, 1, 1, k, false);
    CHECK(dot == static_cast<float>(k));
    float accumulated = 2.0f;  // even: k + 2 is a float
    cpu::tile_product<float>({ones.data(), k, 1}, {ones.data(), 1, 1}, &accumulated, 1, 1, 1, k, true);
    CHECK(accumulated == static_cast<float>(k + 2));
  }
}

TEST_CASE("a size-1 dim's stride is ignored: any value gives the same product in each library") {
  for (GemmLibrary library : libraries()) {
    const LibraryScope scope(library);
    INFO(cpu::gemm_library_name(library));
    // A is 1 x 40 (row stride arbitrary), B is 40 x 1 (column stride arbitrary).
    check_tile<float>(1, 1, 40, {"1 x k, row stride 0", 0, 1, 40}, {"k x 1, column stride 0", 1, 0, 40}, false, 77);
    check_tile<float>(1, 30, 40, {"1 x k, row stride 7", 7, 1, 47}, {"row-major", 30, 1, 1200}, true, 78);
    check_tile<double>(30, 1, 40, {"row-major", 40, 1, 1200}, {"k x 1, column stride 3", 1, 3, 43}, false, 79);
  }
}

TEST_CASE("products through OpenBLAS give the same bits for any thread count and keep the OpenMP setting") {
  if (!cpu::openblas_available()) {
    MESSAGE("Eigen build: there is no OpenBLAS path to check here (the Eigen case is in test_linalg)");
    CHECK(cpu::gemm_library() == GemmLibrary::Eigen);
    return;
  }
  const LibraryScope scope(GemmLibrary::OpenBlas);
  const int threads = get_num_threads();
  // Tiled (256 x 512 x 128 multiply-adds >= 2^23) and untiled but too big for small_gemm (K > 512):
  // the untiled one runs outside our parallel region, where OpenBLAS would split it by itself.
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{256, 512, 128}, {64, 64, 1024}}) {
    INFO("m " << m << " n " << n << " k " << k);
    const Tensor a = random_tensor({m, k}, 90, kFloat32);
    const Tensor b = random_tensor({n, k}, 91, kFloat32);
    const Tensor bias = random_tensor({n}, 92, kFloat32);
    set_num_threads(1);
    const std::vector<float> single = linear(a, b, bias).to_vector<float>();
    set_num_threads(2);
    const std::vector<float> pair = linear(a, b, bias).to_vector<float>();
    CHECK(omp_get_max_threads() == 2);
    set_num_threads(threads);
    CHECK(single == pair);
    std::vector<double> expected;
    const std::vector<double> a64 = values_of(a), b64 = values_of(b), bias64 = values_of(bias);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double total = bias64[j];
        for (int64_t p = 0; p < k; ++p) total += a64[i * k + p] * b64[j * k + p];
        expected.push_back(total);
      }
    check_close(std::vector<double>(single.begin(), single.end()), expected, 1e-4);
  }
}

}  // namespace test_gemm_library
