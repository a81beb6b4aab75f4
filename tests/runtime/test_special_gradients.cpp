// torch.special's gradients by float64 central differences (each op, the composites, a second
// derivative), the composites' values and edges (xlog1py, entr, mvlgamma, ndtr), the errors of
// polygamma's and mvlgamma's arguments, and CUDA == CPU (skipped without a GPU).
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "cuda_test_util.h"
#include "error_of.h"
#include "finite_difference.h"
#include "runtime/special.h"
#include "special_reference.h"

namespace test_special_gradients {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf_of;
using ember::testing::names_line;
namespace reference = ember::testing::special_reference;

namespace {

using Function = std::function<Tensor(const Tensor&)>;

void check_gradient(const Function& function, const std::vector<double>& points, double tolerance = 1e-6) {
  gradcheck_leaves([&](const std::vector<Tensor>& inputs) { return function(inputs[0]); },
                   {leaf_of(points)}, tolerance);
}

}  // namespace

TEST_CASE("special gradients: each op against central differences in float64") {
  const std::vector<double> gamma_points = {0.3, 0.9, 1.46, 2.0, 4.7, 13.5, -0.4, -2.6, -7.3};
  SUBCASE("lgamma") {
    check_gradient([](const Tensor& x) { return ember::lgamma(x); }, gamma_points);
  }
  SUBCASE("digamma") {
    check_gradient([](const Tensor& x) { return ember::digamma(x); }, gamma_points);
  }
  SUBCASE("polygamma") {
    for (int n : {0, 1, 2, 3}) {
      INFO("n = ", n);
      check_gradient([n](const Tensor& x) { return ember::polygamma(n, x); }, gamma_points, 1e-5);
    }
  }
  SUBCASE("erfinv") {
    check_gradient([](const Tensor& x) { return ember::erfinv(x); }, {-0.95, -0.5, -0.1, 0.05, 0.6, 0.99});
  }
  // Each point on its own: i0(30) ~ 8e11 in one sum would swamp the small points' differences.
  SUBCASE("i0, i0e, i1, i1e") {
    for (double point : {-30.0, -4.2, -0.7, 0.0, 0.3, 2.5, 26.0}) {
      INFO("x = ", point);
      check_gradient([](const Tensor& x) { return ember::i0(x); }, {point});
      check_gradient([](const Tensor& x) { return special::i0e(x); }, {point});
      check_gradient([](const Tensor& x) { return special::i1(x); }, {point});
      check_gradient([](const Tensor& x) { return special::i1e(x); }, {point});
    }
  }
  SUBCASE("ndtri") {
    check_gradient([](const Tensor& x) { return special::ndtri(x); }, {0.001, 0.1, 0.3, 0.5, 0.8, 0.97});
  }
  SUBCASE("log_ndtr") {
    check_gradient([](const Tensor& x) { return special::log_ndtr(x); }, {-30.0, -5.0, -1.0, -0.2, 0.7, 4.0, 9.0});
  }
  SUBCASE("erfcx") {
    check_gradient([](const Tensor& x) { return special::erfcx(x); }, {-3.0, -0.5, 0.2, 1.9, 11.9, 12.1, 40.0});
  }
  SUBCASE("composites") {
    check_gradient([](const Tensor& x) { return ember::mvlgamma(x, 3); }, {1.2, 2.5, 7.0});
    check_gradient([](const Tensor& x) { return special::entr(x); }, {0.1, 0.5, 2.0});
    check_gradient([](const Tensor& x) { return special::ndtr(x); }, {-2.0, 0.1, 1.5});
    gradcheck_leaves([](const std::vector<Tensor>& in) { return special::xlog1py(in[0], in[1]); },
              {leaf_of({0.5, -1.5, 2.0}), leaf_of({0.3, 4.0, -0.5})});
  }
}

TEST_CASE("special gradients: the backward differentiates again (lgamma'' = polygamma(1))") {
  const Tensor x = leaf_of({0.7, 3.2, -1.5});
  const Tensor first = autograd::grad({ember::lgamma(x).sum()}, {x}, {}, std::nullopt, true)[0];
  const Tensor second = autograd::grad({first.sum()}, {x})[0];
  const std::vector<double> values = second.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i)
    CHECK(values[i] == doctest::Approx(reference::polygamma(1, x.to_vector<double>()[i])).epsilon(1e-13));
}

TEST_CASE("special gradients: closed forms at the points torch special-cases") {
  // i1'(0) = i1e'(0) = 1/2; log_ndtr' stays finite (about -x) where phi and Phi underflow.
  for (const Function& op : {Function([](const Tensor& x) { return special::i1(x); }),
                             Function([](const Tensor& x) { return special::i1e(x); })}) {
    const Tensor x = leaf_of({0.0});
    op(x).sum().backward();
    CHECK(x.grad().to_vector<double>()[0] == 0.5);
  }
  const Tensor far = leaf_of({-1e4});
  special::log_ndtr(far).sum().backward();
  CHECK(far.grad().to_vector<double>()[0] == doctest::Approx(1e4).epsilon(1e-6));
  // xlog1py at x == 0: the value 0, x's gradient log1p(y) where y > -1 and 0 where y <= -1.
  const Tensor x = leaf_of({0.0, 0.0, 0.0});
  const Tensor y = from_vector<double>({1.0, -1.0, -3.0});
  const Tensor value = special::xlog1py(x, y);
  CHECK(value.to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
  value.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{std::log(2.0), 0.0, 0.0});
}

TEST_CASE("special composites: values and edges as torch's") {
  const double nan = NAN, inf = INFINITY;
  const std::vector<double> xlog1py_values = special::xlog1py(from_vector<double>({0.0, 0.0, 0.0, 2.0, 3.0, 0.0}),
                                                              from_vector<double>({nan, -1.0, inf, 0.5, -1.0, -2.0}))
                                                 .to_vector<double>();
  CHECK(std::isnan(xlog1py_values[0]));
  CHECK(xlog1py_values[1] == 0.0);
  CHECK(xlog1py_values[2] == 0.0);
  CHECK(xlog1py_values[3] == doctest::Approx(2 * std::log1p(0.5)).epsilon(1e-15));
  CHECK(xlog1py_values[4] == -inf);
  CHECK(xlog1py_values[5] == 0.0);
  CHECK(special::xlog1py(from_vector<int64_t>({1, 2}), 1.0).dtype() == kFloat32);
  CHECK(special::xlog1py(2.0, from_vector<double>({1e-20})).to_vector<double>()[0] == 2e-20);
  const std::vector<double> entropy =
      special::entr(from_vector<double>({0.0, 0.5, -1.0, nan, 3.0})).to_vector<double>();
  CHECK(entropy[0] == 0.0);
  CHECK(entropy[1] == doctest::Approx(0.5 * std::log(2.0)).epsilon(1e-15));
  CHECK(entropy[2] == -inf);
  CHECK(std::isnan(entropy[3]));
  CHECK(entropy[4] == doctest::Approx(-3 * std::log(3.0)).epsilon(1e-15));
  // mvlgamma(x, p) = sum_j<p lgamma(x - j/2) + p (p-1)/4 log(pi).
  const std::vector<double> points = {1.6, 3.25, 20.0};
  const std::vector<double> multivariate = ember::mvlgamma(from_vector<double>(points), 4).to_vector<double>();
  const std::vector<double> alias = special::multigammaln(from_vector<double>(points), 4).to_vector<double>();
  for (size_t i = 0; i < points.size(); ++i) {
    double expected = 3 * std::log(std::numbers::pi);
    for (int j = 0; j < 4; ++j) expected += reference::lgamma(points[i] - 0.5 * j);
    CHECK(multivariate[i] == doctest::Approx(expected).epsilon(1e-14));
    CHECK(alias[i] == multivariate[i]);
  }
  const std::vector<double> cdf = special::ndtr(from_vector<double>({-40.0, 0.0, 1.0})).to_vector<double>();
  CHECK(cdf[0] == doctest::Approx(std::erfc(40 / std::numbers::sqrt2) / 2).epsilon(1e-14));
  CHECK(cdf[1] == 0.5);
  CHECK(cdf[2] == doctest::Approx(0.841344746068542948585).epsilon(1e-15));
  CHECK(special::gammaln(from_vector<double>({4.0})).to_vector<double>()[0] ==
        doctest::Approx(std::log(6.0)).epsilon(1e-15));
}

TEST_CASE("special errors: polygamma's negative n and mvlgamma's p and domain name the values and the call site") {
  const Tensor x = from_vector<double>({0.4, 2.0});
  std::string message = error_of([&] { ember::polygamma(-1, x); });
  CHECK(message.find("polygamma") != std::string::npos);
  CHECK(message.find("n = -1") != std::string::npos);
  CHECK(names_line(message, __LINE__ - 3));
  message = error_of([&] { ember::mvlgamma(x, 0); });
  CHECK(message.find("p has to be greater than or equal to 1") != std::string::npos);
  CHECK(names_line(message, __LINE__ - 2));
  message = error_of([&] { special::multigammaln(x, 2); });  // 0.4 <= (2 - 1) / 2
  CHECK(message.find("all elements must be greater than (p-1)/2 = 0.5") != std::string::npos);
  CHECK(message.find("smallest is 0.4") != std::string::npos);
  CHECK(names_line(message, __LINE__ - 3));
}

TEST_CASE("special functions: CUDA equals CPU for every op and dtype") {
  if (!ember::testing::cuda_or_skip()) return;
  const std::vector<double> grid = {-30.5, -2.5, -0.3, 0.0, 1e-5, 0.2, 0.7, 0.95, 1.4616, 3.0, 12.5, 30.0, 400.0};
  const std::vector<Function> ops = {
      [](const Tensor& x) { return ember::lgamma(x); },       [](const Tensor& x) { return ember::digamma(x); },
      [](const Tensor& x) { return ember::polygamma(3, x); }, [](const Tensor& x) { return ember::erfinv(x); },
      [](const Tensor& x) { return ember::i0(x); },           [](const Tensor& x) { return special::i0e(x); },
      [](const Tensor& x) { return special::i1(x); },         [](const Tensor& x) { return special::i1e(x); },
      [](const Tensor& x) { return special::ndtri(x); },      [](const Tensor& x) { return special::log_ndtr(x); },
      [](const Tensor& x) { return special::erfcx(x); },
  };
  for (DType dtype : {kFloat64, kFloat32, kBFloat16}) {
    const Tensor cpu = from_vector<double>(grid).to(dtype);
    for (size_t k = 0; k < ops.size(); ++k) {
      INFO("op ", k, " ", dtype);
      const std::vector<double> expected = ops[k](cpu).to(kFloat64).to_vector<double>();
      const std::vector<double> got =
          ops[k](cpu.to(ember::cuda_test::kCuda0)).to(kCPU).to(kFloat64).to_vector<double>();
      for (size_t i = 0; i < grid.size(); ++i) {
        INFO("x = ", grid[i]);
        if (!std::isfinite(expected[i])) {
          CHECK((std::isnan(expected[i]) ? std::isnan(got[i]) : got[i] == expected[i]));
          continue;
        }
        // CUDA's erf, erfc, exp and log differ from glibc's by an ulp or two of double; the
        // narrower dtypes round that to the same value or the next one.
        const double tolerance = dtype == kFloat64 ? 1e-13 : dtype == kFloat32 ? 1.2e-7 : 8e-3;
        CHECK(std::abs(got[i] - expected[i]) <= tolerance * std::abs(expected[i]));
      }
    }
  }
}

}  // namespace test_special_gradients
