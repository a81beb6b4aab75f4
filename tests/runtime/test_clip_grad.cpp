// clip_grad_norm_ and clip_grad_value_ against PyTorch 1.13.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "runtime/ember.h"

namespace test_clip_grad {

using namespace ember;

namespace {

// a [2, 3] and b [4] with the gradients of the PyTorch snippet; c has no gradient.
//   a.grad = torch.tensor([[0.3, -0.8, 1.5], [-0.2, 0.9, -1.1]]); b.grad = torch.tensor([-0.5, 0.25, 0.7, 2.0])
//   total = torch.nn.utils.clip_grad_norm_([a, b, c], max_norm, norm_type)
struct Gradients {
  Tensor a = zeros({2, 3}).requires_grad_();
  Tensor b = zeros({4}).requires_grad_();
  Tensor c = zeros({2}).requires_grad_();

  Gradients() {
    a.set_grad(from_vector<float>({0.3f, -0.8f, 1.5f, -0.2f, 0.9f, -1.1f}, {2, 3}));
    b.set_grad(from_vector<float>({-0.5f, 0.25f, 0.7f, 2.0f}));
  }
  std::vector<Tensor> all() const { return {a, b, c}; }
};

void check_grads(const Gradients& grads, const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<float> actual_a = grads.a.grad().to_vector<float>();
  const std::vector<float> actual_b = grads.b.grad().to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(actual_a[i] == doctest::Approx(a[i]).epsilon(1e-6));
  for (size_t i = 0; i < b.size(); ++i) CHECK(actual_b[i] == doctest::Approx(b[i]).epsilon(1e-6));
}

}  // namespace

TEST_CASE("clip_grad_norm_ with the 2-norm scales all gradients together") {
  Gradients grads;
  // PyTorch: total 3.1372759342193604 (float32); the double-precision norm agrees to 1e-7.
  const double total = nn::utils::clip_grad_norm_(grads.all(), 1.0);
  CHECK(total == doctest::Approx(3.1372759342193604).epsilon(1e-7));
  check_grads(grads,
              {0.09562433511018753, -0.25499820709228516, 0.47812163829803467, -0.06374955177307129,
               0.2868729829788208, -0.3506225347518921},
              {-0.15937387943267822, 0.07968693971633911, 0.2231234312057495, 0.6374955177307129});
  CHECK_FALSE(grads.c.grad().defined());
}

TEST_CASE("clip_grad_norm_ with the 1-, 3- and infinity norms") {
  SUBCASE("1-norm") {
    Gradients grads;
    CHECK(optim::clip_grad_norm_(grads.all(), 2.0, 1.0) == doctest::Approx(8.25).epsilon(1e-7));
    check_grads(grads,
                {0.072727270424366, -0.19393937289714813, 0.363636314868927, -0.04848484322428703,
                 0.2181817889213562, -0.2666666507720947},
                {-0.12121210992336273, 0.060606054961681366, 0.16969695687294006, 0.4848484396934509});
  }
  SUBCASE("3-norm") {
    Gradients grads;
    CHECK(optim::clip_grad_norm_(grads.all(), 1.0, 3.0) == doctest::Approx(2.4365711212158203).epsilon(1e-7));
    check_grads(grads,
                {0.12312379479408264, -0.3283301293849945, 0.6156189441680908, -0.08208253234624863,
                 0.36937135457992554, -0.45145392417907715},
                {-0.20520631968975067, 0.10260315984487534, 0.2872888445854187, 0.8208252787590027});
  }
  SUBCASE("infinity norm") {
    Gradients grads;
    const double infinity = std::numeric_limits<double>::infinity();
    CHECK(optim::clip_grad_norm_(grads.all(), 0.5, infinity) == doctest::Approx(2.0).epsilon(1e-7));
    check_grads(grads,
                {0.07499996572732925, -0.19999991357326508, 0.3749998211860657, -0.04999997839331627,
                 0.22499988973140717, -0.2749998867511749},
                {-0.12499994039535522, 0.06249997019767761, 0.1749999076128006, 0.4999997615814209});
  }
}

TEST_CASE("clip_grad_norm_ leaves gradients below the limit unchanged") {
  Gradients grads;
  CHECK(optim::clip_grad_norm_(grads.all(), 100.0) == doctest::Approx(3.1372759342193604).epsilon(1e-7));
  CHECK(grads.b.grad().to_vector<float>() == std::vector<float>{-0.5f, 0.25f, 0.7f, 2.0f});
}

TEST_CASE("clip_grad_norm_ edge cases and errors") {
  Tensor lonely = zeros({3}).requires_grad_();
  CHECK(optim::clip_grad_norm_({lonely}, 1.0) == 0.0);
  CHECK_THROWS_WITH_AS(optim::clip_grad_norm_({lonely}, 1.0, std::nan("")),
                       doctest::Contains("clip_grad_norm_: norm_type must be a number (any p, or +-infinity), got nan"),
                       Error);
  lonely.set_grad(from_vector<float>({1.0f, std::numeric_limits<float>::infinity(), 2.0f}));
  CHECK_THROWS_WITH_AS(optim::clip_grad_norm_({lonely}, 1.0, 2.0, true),
                       doctest::Contains("clip_grad_norm_: the total norm of order 2 of the gradients is non-finite"),
                       Error);
  CHECK(lonely.grad().to_vector<float>()[0] == 1.0f);
}

TEST_CASE("clip_grad_value_ clamps every gradient element") {
  Gradients grads;
  optim::clip_grad_value_(grads.all(), 0.75);
  CHECK(grads.a.grad().to_vector<float>() == std::vector<float>{0.3f, -0.75f, 0.75f, -0.2f, 0.75f, -0.75f});
  CHECK(grads.b.grad().to_vector<float>() == std::vector<float>{-0.5f, 0.25f, 0.7f, 0.75f});
}

TEST_CASE("get_total_norm and clip_grads_with_norm_ are clip_grad_norm_ without the host read") {
  const double infinity = std::numeric_limits<double>::infinity();
  for (const double norm_type : {1.0, 2.0, 3.0, infinity}) {
    INFO("norm_type ", norm_type);
    Gradients split, whole;
    const double max_norm = 0.75;
    const Tensor norm = nn::utils::get_total_norm({split.a.grad(), split.b.grad(), split.c.grad()}, norm_type);
    CHECK(norm.dim() == 0);
    CHECK(norm.dtype() == kFloat64);
    nn::utils::clip_grads_with_norm_(split.all(), max_norm, norm);
    const double expected = optim::clip_grad_norm_(whole.all(), max_norm, norm_type);
    CHECK(norm.item() == doctest::Approx(expected).epsilon(1e-12));
    // The scale rounds to float before multiplying, as the double overload's scalar does.
    CHECK(split.a.grad().to_vector<float>() == whole.a.grad().to_vector<float>());
    CHECK(split.b.grad().to_vector<float>() == whole.b.grad().to_vector<float>());
  }
}

TEST_CASE("clip_grads_with_norm_ leaves small gradients alone and spreads a NaN norm") {
  Gradients grads;
  nn::utils::clip_grads_with_norm_(grads.all(), 100.0, nn::utils::get_total_norm({grads.a.grad(), grads.b.grad()}));
  CHECK(grads.b.grad().to_vector<float>() == std::vector<float>{-0.5f, 0.25f, 0.7f, 2.0f});
  nn::utils::clip_grads_with_norm_(grads.all(), 1.0, full({}, std::nan(""), {.dtype = kFloat64}));
  CHECK(std::isnan(grads.a.grad().to_vector<float>()[0]));  // as PyTorch: scaled by NaN, not skipped
  CHECK(nn::utils::get_total_norm({Tensor(), zeros({0})}).item() == 0.0);
  CHECK_THROWS_WITH_AS(nn::utils::clip_grads_with_norm_(grads.all(), 1.0, zeros({2}, {.dtype = kFloat64})),
                       doctest::Contains("clip_grads_with_norm_: total_norm must hold one value"), Error);
  CHECK_THROWS_WITH_AS(nn::utils::get_total_norm({grads.a.grad()}, std::nan("")),
                       doctest::Contains("get_total_norm: norm_type must be a number"), Error);
  Tensor infinite = from_vector<float>({1.0f, std::numeric_limits<float>::infinity()});
  // The error names the function called, not clip_grad_norm_ (which shares the check).
  const char* expected = "get_total_norm: the total norm of order 2 of the gradients is non-finite (inf)";
  CHECK_THROWS_WITH_AS(nn::utils::get_total_norm({infinite}, 2.0, true), doctest::Contains(expected), Error);
}

TEST_CASE("norm_type 0, -infinity and negative p are taken as torch.linalg.vector_norm takes them") {
  // PyTorch's total is vector_norm(stack([vector_norm(g, p) for g in grads]), p):
  //   a = [3, 0, -4], b = zeros(2, 2), c = [0.5, -2], d = [-0.25, 3]
  //   p = 0:    vector_norm([2, 0, 2], 0) = 2 gradients with a non-zero element (not 4 elements)
  //   p = -inf: min |g| = 0 over a, b, c; 0.25 over c, d
  //   p = -1:   (1/0.5 + 1/2 + 1/0.25 + 1/3)^-1 over c, d
  const Tensor a = from_vector<double>({3.0, 0.0, -4.0});
  const Tensor b = zeros({2, 2}, {.dtype = kFloat64});
  const Tensor c = from_vector<double>({0.5, -2.0});
  const Tensor d = from_vector<double>({-0.25, 3.0});
  const double infinity = std::numeric_limits<double>::infinity();
  CHECK(nn::utils::get_total_norm({a, b, c}, 0.0).item() == 2.0);
  CHECK(nn::utils::get_total_norm({b}, 0.0).item() == 0.0);
  CHECK(nn::utils::get_total_norm({a, b, c}, -infinity).item() == 0.0);
  CHECK(nn::utils::get_total_norm({c, d}, -infinity).item() == 0.25);
  CHECK(nn::utils::get_total_norm({c, d}, -1.0).item() ==
        doctest::Approx(1.0 / (1.0 / 0.5 + 1.0 / 2.0 + 1.0 / 0.25 + 1.0 / 3.0)).epsilon(1e-15));
  // A NaN is non-zero for the 0-norm and wins the minimum, as in vector_norm.
  const Tensor with_nan = from_vector<double>({std::nan(""), 1.0});
  CHECK(nn::utils::get_total_norm({with_nan, b}, 0.0).item() == 1.0);
  CHECK(std::isnan(nn::utils::get_total_norm({c, with_nan}, -infinity).item()));

  // clip_grad_norm_ scales by max_norm / (total + 1e-6) with these totals too.
  Tensor p = zeros({3}, {.dtype = kFloat64}).requires_grad_();
  Tensor q = zeros({2, 2}, {.dtype = kFloat64}).requires_grad_();
  Tensor r = zeros({2}, {.dtype = kFloat64}).requires_grad_();
  p.set_grad(a.clone());
  q.set_grad(b.clone());
  r.set_grad(c.clone());
  CHECK(optim::clip_grad_norm_({p, q, r}, 1.0, 0.0) == 2.0);
  const double coefficient = 1.0 / (2.0 + 1e-6);
  CHECK(p.grad().to_vector<double>() == std::vector<double>{3.0 * coefficient, 0.0, -4.0 * coefficient});
  CHECK(r.grad().to_vector<double>() == std::vector<double>{0.5 * coefficient, -2.0 * coefficient});
  r.set_grad(c.clone());
  CHECK(optim::clip_grad_norm_({r}, 0.1, -infinity) == 0.5);
  CHECK(r.grad().to_vector<double>() == std::vector<double>{0.5 * (0.1 / (0.5 + 1e-6)), -2.0 * (0.1 / (0.5 + 1e-6))});
}

}  // namespace test_clip_grad
