// diff, trapezoid, cumulative_trapezoid, cov, corrcoef and renorm (runtime/functional_math_extra.h)
// against float64 loops written here from torch's definitions; edge cases (n past the size,
// empty dims, correction 0 and 1, weights, zero-norm rows), gradients and errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_ops_composites_statistics {

using namespace ember;
using ember::testing::check_refusal;
using ember::testing::doubles;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::small_tensor;
using ember::testing::values_of;
using Inputs = std::vector<Tensor>;

namespace {

void check_close(const std::vector<double>& got, const std::vector<double>& expected, double tolerance = 1e-13) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO((std::string("element ") + std::to_string(i)));
    if (std::isnan(expected[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(std::abs(got[i] - expected[i]) <= tolerance * (1.0 + std::abs(expected[i])));
  }
}

// torch.cov by its formula over rows of a [vars, obs] matrix, weights w (empty: all 1) and aweights.
std::vector<double> cov_reference(const std::vector<double>& a, int64_t vars, int64_t obs, int64_t correction,
                                  std::vector<double> w, const std::vector<double>& aw) {
  if (w.empty()) w.assign(obs, 1.0);
  double w_sum = 0.0, wa_sum = 0.0;
  for (int64_t k = 0; k < obs; ++k) {
    w_sum += w[k];
    wa_sum += w[k] * (aw.empty() ? 1.0 : aw[k]);
  }
  const double divisor = std::max(0.0, aw.empty() ? w_sum - correction : w_sum - correction * wa_sum / w_sum);
  std::vector<double> means(vars, 0.0), result;
  for (int64_t i = 0; i < vars; ++i)
    for (int64_t k = 0; k < obs; ++k) means[i] += w[k] * a[i * obs + k] / w_sum;
  for (int64_t i = 0; i < vars; ++i)
    for (int64_t j = 0; j < vars; ++j) {
      double total = 0.0;
      for (int64_t k = 0; k < obs; ++k) total += w[k] * (a[i * obs + k] - means[i]) * (a[j * obs + k] - means[j]);
      result.push_back(total / divisor);
    }
  return result;
}

}  // namespace

TEST_CASE("diff: n-th differences with prepend and append, bool, n past the size") {
  const Tensor a = small_tensor({2, 5}, 1);
  const std::vector<double> av = values_of(a);
  for (int64_t n = 0; n <= 6; ++n) {
    INFO((std::string("n ") + std::to_string(n)));
    std::vector<double> rows = av;
    int64_t length = 5;
    for (int64_t step = 0; step < n && length > 0; ++step, --length) {
      std::vector<double> next;
      for (int i = 0; i < 2; ++i)
        for (int64_t j = 0; j + 1 < length; ++j) next.push_back(rows[i * length + j + 1] - rows[i * length + j]);
      rows = next;
    }
    const Tensor result = diff(a, n);
    CHECK(result.sizes() == Dims{2, std::max<int64_t>(5 - n, 0)});
    check_close(values_of(result), rows);
  }
  const Tensor before = small_tensor({1, 5}, 2), after = small_tensor({2, 5}, 3);
  const std::vector<double> bv = values_of(before), cv = values_of(after);
  std::vector<double> joined = bv;
  joined.insert(joined.end(), av.begin(), av.end());
  joined.insert(joined.end(), cv.begin(), cv.end());  // [5, 5] along dim 0
  std::vector<double> expected;
  for (int i = 0; i + 1 < 5; ++i)
    for (int j = 0; j < 5; ++j) expected.push_back(joined[(i + 1) * 5 + j] - joined[i * 5 + j]);
  check_close(values_of(diff(a, 1, 0, before, after)), expected);
  const Tensor flags = from_vector<bool>({true, true, false, true}, {4});
  CHECK(diff(flags).to_vector<bool>() == std::vector<bool>{false, true, true});
  CHECK(diff(from_vector<int32_t>({1, 4, 9}, {3}), 2).to_vector<int32_t>() == std::vector<int32_t>{2});
  gradcheck_leaves([](const Inputs& in) { return diff(in[0], 2, 1, in[1]); }, {leaf({2, 4}, 4), leaf({2, 1}, 5)});
}

TEST_CASE("trapezoid and cumulative_trapezoid: spacing, sample points, empty dims, dtypes") {
  const Tensor y = small_tensor({3, 4}, 6), x = small_tensor({4}, 7);
  const std::vector<double> yv = values_of(y), xv = values_of(x);
  std::vector<double> with_dx, with_x, running_dx, running_x;
  for (int i = 0; i < 3; ++i) {
    double total_dx = 0.0, total_x = 0.0;
    for (int j = 0; j + 1 < 4; ++j) {
      const double pair = yv[i * 4 + j] + yv[i * 4 + j + 1];
      total_dx += 0.5 * pair / 2.0;
      total_x += (xv[j + 1] - xv[j]) * pair / 2.0;
      running_dx.push_back(total_dx);
      running_x.push_back(total_x);
    }
    with_dx.push_back(total_dx);
    with_x.push_back(total_x);
  }
  check_close(values_of(trapezoid(y, 0.5)), with_dx);
  check_close(values_of(trapezoid(y, x)), with_x);
  check_close(values_of(trapz(y, x, 1)), with_x);
  check_close(values_of(cumulative_trapezoid(y, 0.5)), running_dx);
  check_close(values_of(cumulative_trapezoid(y, x)), running_x);
  check_close(values_of(trapezoid(y, x.expand({3, 4}))), with_x);  // x of y's shape
  const Tensor ints = from_vector<int32_t>({1, 3, 6}, {3});
  CHECK(trapezoid(ints).dtype() == kFloat32);
  CHECK(trapezoid(ints).item() == 6.5);
  CHECK(cumulative_trapezoid(ints, 2.0).dtype() == kFloat32);  // dx / 2 = 1.0 still makes floats
  const Tensor empty_dim = zeros({2, 0}, {.dtype = kInt64});
  CHECK(trapezoid(empty_dim).sizes() == Dims{2});
  CHECK(trapezoid(empty_dim).dtype() == kInt64);
  CHECK(cumulative_trapezoid(zeros({2, 0})).sizes() == Dims{2, 0});
  gradcheck_leaves([](const Inputs& in) { return trapezoid(in[0], in[1], 0); }, {leaf({4, 2}, 8), leaf({4}, 9)});
  gradcheck_leaves([](const Inputs& in) { return cumulative_trapezoid(in[0], in[1]); },
                   {leaf({2, 3}, 10), leaf({3}, 11)});
  gradcheck_leaves([](const Inputs& in) { return trapezoid(in[0], 0.25); }, {leaf({2, 3}, 12)});
}

TEST_CASE("cov and corrcoef: corrections, weights, one variable, empty observations") {
  const Tensor a = small_tensor({3, 5}, 13);
  const std::vector<double> av = values_of(a);
  for (int64_t correction : {0, 1, 2}) {
    INFO((std::string("correction ") + std::to_string(correction)));
    check_close(values_of(cov(a, correction)), cov_reference(av, 3, 5, correction, {}, {}));
  }
  const Tensor fw = from_vector<int64_t>({1, 3, 0, 2, 1}, {5});
  const Tensor aw = doubles({0.5, 1.0, 2.0, 0.25, 1.5});
  const std::vector<double> fwv{1, 3, 0, 2, 1}, awv = values_of(aw);
  std::vector<double> both(5);
  for (int k = 0; k < 5; ++k) both[k] = fwv[k] * awv[k];
  check_close(values_of(cov(a, 1, fw)), cov_reference(av, 3, 5, 1, fwv, {}));
  check_close(values_of(cov(a, 1, {}, aw)), cov_reference(av, 3, 5, 1, awv, awv));
  check_close(values_of(cov(a, 1, fw, aw)), cov_reference(av, 3, 5, 1, both, awv));
  check_close(values_of(cov(a, 0, fw, aw)), cov_reference(av, 3, 5, 0, both, awv));
  // One variable (1-D) gives a 0-d variance; more correction than observations divides by 0.
  const Tensor v = small_tensor({4}, 14);
  CHECK(cov(v).dim() == 0);
  check_close({cov(v).item()}, {var(v).item()});
  CHECK(std::isinf(cov(v, 4).item()));
  CHECK(std::isnan(cov(zeros({2, 0}, {.dtype = kFloat64})).reshape({-1}).to_vector<double>()[0]));
  CHECK(cov(from_vector<int32_t>({1, 2, 4}, {3})).dtype() == kFloat32);
  CHECK(cov(small_tensor({2, 5}, 15, kFloat32), 1, {}, aw).dtype() == kFloat64);  // torch's promotion

  const std::vector<double> c = cov_reference(av, 3, 5, 1, {}, {});
  std::vector<double> r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      r.push_back(std::clamp(c[i * 3 + j] / std::sqrt(c[i * 3 + i] * c[j * 3 + j]), -1.0, 1.0));
  check_close(values_of(corrcoef(a)), r);
  CHECK(corrcoef(v).item() == 1.0);

  gradcheck_leaves([](const Inputs& in) { return cov(in[0]); }, {leaf({2, 4}, 16)});
  gradcheck_leaves([](const Inputs& in) { return cov(in[0], 0, {}, in[1].abs()); }, {leaf({2, 4}, 17), leaf({4}, 18)});
  // Off the diagonal only: the diagonal of corrcoef is 1 whatever the input (a clamp at its bound).
  gradcheck_leaves([](const Inputs& in) { return corrcoef(in[0]).triu(1); }, {leaf({3, 5}, 19)});
}

TEST_CASE("renorm: slices above maxnorm scaled, zero-norm rows kept, gradients") {
  const Tensor a = small_tensor({3, 4}, 20).mul(2.0);
  const std::vector<double> av = values_of(a);
  for (const double p : {1.0, 2.0, 3.5}) {
    INFO((std::string("p ") + std::to_string(p)));
    std::vector<double> expected = av;
    for (int j = 0; j < 4; ++j) {  // dim 1: slices are columns
      double total = 0.0;
      for (int i = 0; i < 3; ++i) total += std::pow(std::abs(av[i * 4 + j]), p);
      const double norm = std::pow(total, 1.0 / p);
      const double factor = norm > 1.5 ? 1.5 / (norm + 1e-7) : 1.0;
      for (int i = 0; i < 3; ++i) expected[i * 4 + j] = av[i * 4 + j] * factor;
    }
    check_close(values_of(renorm(a, p, 1, 1.5)), expected);
  }
  // A row of zeros is under every maxnorm, 0 included: kept, and its gradient is finite.
  const Tensor with_zero = cat({zeros({1, 3}, {.dtype = kFloat64}), small_tensor({2, 3}, 21)}, 0).requires_grad_();
  const Tensor out = renorm(with_zero, 2.0, 0, 0.0);
  CHECK(values_of(out)[0] == 0.0);
  out.sum().backward();
  for (double g : values_of(with_zero.grad())) CHECK(std::isfinite(g));
  check_close({values_of(with_zero.grad())[0]}, {1.0});  // factor 1 there
  gradcheck_leaves([](const Inputs& in) { return renorm(in[0], 2.0, 0, 0.7); }, {leaf({3, 4}, 22)}, 1e-5);
  gradcheck_leaves([](const Inputs& in) { return renorm(in[0], 3.0, -1, 0.9); }, {leaf({2, 3}, 23)}, 1e-5);
}

TEST_CASE("statistics composites: errors name the function, the values and the caller's line") {
  const Tensor a = small_tensor({2, 3}, 24);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { diff(a, -1); });
  check_refusal(message, "diff: order must be non-negative but got -1", line);
  line = __LINE__ + 1;
  message = error_of([&] { diff(a, 1, -1, small_tensor({3}, 25)); });
  check_refusal(message, "diff: expects prepend or append to be the same dimension as input", line);
  line = __LINE__ + 1;
  message = error_of([&] { trapezoid(a, small_tensor({4}, 26)); });
  check_refusal(message, "trapezoid: There must be one `x` value for each sample point, got 4 x values", line);
  line = __LINE__ + 1;
  message = error_of([&] { cov(zeros({2, 2, 2})); });
  check_refusal(message, "cov(): expected input to have two or fewer dimensions but got an input with 3 dimensions",
                line);
  line = __LINE__ + 1;
  message = error_of([&] { cov(a, 1, doubles({1, 1, 1})); });
  check_refusal(message, "cov(): expected fweights to have integral dtype but got fweights with float64 dtype", line);
  line = __LINE__ + 1;
  message = error_of([&] { cov(a, 1, {}, doubles({1.0, -1.0, 2.0})); });
  check_refusal(message, "cov(): aweights cannot be negative", line);
  line = __LINE__ + 1;
  message = error_of([&] { cov(a, 1, from_vector<int64_t>({1, 1}, {2})); });
  check_refusal(message, "there are observations in the input but got 2 != 3", line);
  line = __LINE__ + 1;
  message = error_of([&] { cov(a, 1, from_vector<int64_t>({0, 0, 0}, {3})); });
  check_refusal(message, "cov(): weights sum to zero, can't be normalized", line);
  line = __LINE__ + 1;
  message = error_of([&] { renorm(a, 0.0, 0, 1.0); });
  check_refusal(message, "renorm: non-positive-norm not supported, got p = 0", line);
  line = __LINE__ + 1;
  message = error_of([&] { renorm(a, 2.0, 0, -1.0); });
  check_refusal(message, "renorm: expected maxnorm to be >= 0 but got -1", line);
  line = __LINE__ + 1;
  message = error_of([&] { renorm(small_tensor({3}, 27), 2.0, 0, 1.0); });
  check_refusal(message, "renorm: input needs at least 2 dimensions, got 1 dimensions", line);
}

}  // namespace test_ops_composites_statistics
