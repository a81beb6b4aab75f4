// Backward rules of the pointwise ops, checked against central finite differences in float64
// (inputs kept away from kinks), plus tie splitting, zero bases, float32 backward ops, and ops
// that must not record gradients.
#include <limits>

#include "pointwise_test_util.h"

namespace test_pointwise_backward {

using namespace pointwise_test;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

GradInput grad_input(const Dims& sizes, double low, double high, uint32_t seed, double avoid = 0.0) {
  return {random_values(sizes.product(), low, high, seed, 0.05, avoid), sizes};
}

// Checks the op on a contiguous [3, 4] input and on a transposed view of a [4, 3] one.
void gradcheck_unary(const std::string& name, const Unary& op, double low, double high, uint32_t seed,
                     double avoid = 0.0) {
  gradcheck(name, [&](const std::vector<Tensor>& x) { return op(x[0]); }, {grad_input({3, 4}, low, high, seed, avoid)});
  gradcheck(name + " transposed", [&](const std::vector<Tensor>& x) { return op(x[0].t()); },
            {grad_input({4, 3}, low, high, seed + 1, avoid)});
}

}  // namespace

TEST_CASE("unary backward rules match finite differences") {
  gradcheck_unary("neg", [](const Tensor& a) { return neg(a); }, -3, 3, 1);
  gradcheck_unary("exp", [](const Tensor& a) { return ember::exp(a); }, -3, 3, 3);
  gradcheck_unary("log", [](const Tensor& a) { return ember::log(a); }, 0.2, 5, 5);
  gradcheck_unary("log1p", [](const Tensor& a) { return log1p(a); }, -0.8, 5, 7);
  gradcheck_unary("sqrt", [](const Tensor& a) { return ember::sqrt(a); }, 0.2, 5, 9);
  gradcheck_unary("rsqrt", [](const Tensor& a) { return rsqrt(a); }, 0.2, 5, 11);
  gradcheck_unary("abs", [](const Tensor& a) { return ember::abs(a); }, -3, 3, 13);
  gradcheck_unary("sign", [](const Tensor& a) { return sign(a); }, -3, 3, 15);
  gradcheck_unary("reciprocal", [](const Tensor& a) { return reciprocal(a); }, -3, 3, 17);
  gradcheck_unary("relu", [](const Tensor& a) { return relu(a); }, -3, 3, 19);
  gradcheck_unary("gelu", [](const Tensor& a) { return gelu(a); }, -4, 4, 21);
  gradcheck_unary("gelu tanh", [](const Tensor& a) { return gelu(a, true); }, -4, 4, 23);
  gradcheck_unary("silu", [](const Tensor& a) { return silu(a); }, -6, 6, 25);
  gradcheck_unary("sigmoid", [](const Tensor& a) { return sigmoid(a); }, -6, 6, 27);
  gradcheck_unary("tanh", [](const Tensor& a) { return ember::tanh(a); }, -3, 3, 29);
  gradcheck_unary("clamp", [](const Tensor& a) { return clamp(a, -1.0, 1.5); }, -3, 3, 31, 1.5);
  gradcheck_unary("clamp min", [](const Tensor& a) { return clamp(a, -1.0, std::nullopt); }, -3, 3, 33, -1.0);
  gradcheck_unary("clamp max", [](const Tensor& a) { return clamp(a, std::nullopt, 0.5); }, -3, 3, 35, 0.5);
}

TEST_CASE("scalar op backward rules match finite differences") {
  gradcheck_unary("add_scalar", [](const Tensor& a) { return add(a, 1.5); }, -3, 3, 41);
  gradcheck_unary("mul_scalar", [](const Tensor& a) { return mul(a, -1.5); }, -3, 3, 43);
  gradcheck_unary("div_scalar", [](const Tensor& a) { return div(a, 0.7); }, -3, 3, 45);
  gradcheck_unary("rsub_scalar", [](const Tensor& a) { return rsub(a, 0.7); }, -3, 3, 47);
  gradcheck_unary("rdiv_scalar", [](const Tensor& a) { return rdiv(a, 0.7); }, -3, 3, 49);
  for (double exponent : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0, 1.7}) {
    gradcheck_unary("pow_scalar " + std::to_string(exponent),
                    [exponent](const Tensor& a) { return ember::pow(a, exponent); }, 0.2, 3, 51);
  }
}

TEST_CASE("binary backward rules match finite differences") {
  using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::tuple<std::string, Binary, double, double>> cases{
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b, 0.5); }, -3, 3},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b, 2.0); }, -3, 3},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, -3, 3},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, -3, 3},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, -3, 3},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, -3, 3},
      {"pow", [](const Tensor& a, const Tensor& b) { return ember::pow(a, b); }, 0.2, 3},
  };
  auto next_seed = [counter = uint32_t{60}]() mutable { return ++counter; };
  for (const auto& [name, op, low, high] : cases) {
    gradcheck(name, [&](const std::vector<Tensor>& x) { return op(x[0], x[1]); },
              {grad_input({3, 4}, low, high, next_seed()), grad_input({3, 4}, low, high, next_seed())});
    gradcheck(name + " transposed", [&](const std::vector<Tensor>& x) { return op(x[0].t(), x[1]); },
              {grad_input({4, 3}, low, high, next_seed()), grad_input({3, 4}, low, high, next_seed())});
  }
  // pow with a negative base and an integral exponent: the base gradient is still defined.
  const Tensor integral = from_vector<double>({2, 3, -1, 2});
  gradcheck("pow negative base", [&](const std::vector<Tensor>& x) { return ember::pow(x[0], integral); },
            {grad_input({4}, -3, -0.5, 71)});
}

TEST_CASE("binary backward reduces gradients of broadcast inputs") {
  gradcheck("mul broadcast", [](const std::vector<Tensor>& x) { return mul(x[0], x[1]); },
            {grad_input({3, 1, 4}, -2, 2, 81), grad_input({5, 4}, -2, 2, 82)});
  gradcheck("maximum broadcast", [](const std::vector<Tensor>& x) { return maximum(x[0], x[1]); },
            {grad_input({2, 3}, -2, 2, 83), grad_input({3}, -2, 2, 84)});
  gradcheck("pow broadcast", [](const std::vector<Tensor>& x) { return ember::pow(x[0], x[1]); },
            {grad_input({2, 3}, 0.2, 2, 85), grad_input({}, 0.5, 2, 86)});
  gradcheck("where broadcast",
            [](const std::vector<Tensor>& x) { return where(from_vector<bool>({true, false, true}), x[0], x[1]); },
            {grad_input({2, 3}, -2, 2, 87), grad_input({}, -2, 2, 88)});
}

TEST_CASE("where sends the gradient to a where the condition holds and to b elsewhere") {
  const Tensor condition = from_vector<bool>({true, false, false, true, true, false}, {2, 3}, {.dtype = kBool});
  gradcheck("where", [&](const std::vector<Tensor>& x) { return where(condition, x[0], x[1]); },
            {grad_input({2, 3}, -2, 2, 91), grad_input({2, 3}, -2, 2, 92)});
  Tensor a = from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}, {.dtype = kFloat64}).requires_grad_();
  Tensor b = from_vector<double>({-1, -2, -3, -4, -5, -6}, {2, 3}, {.dtype = kFloat64}).requires_grad_();
  where(condition, a, b).backward(from_vector<double>({10, 20, 30, 40, 50, 60}, {2, 3}, {.dtype = kFloat64}));
  CHECK(a.grad().to_vector<double>() == std::vector<double>{10, 0, 0, 40, 50, 0});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{0, 20, 30, 0, 0, 60});
}

TEST_CASE("maximum and minimum split the gradient evenly on ties (PyTorch 1.13)") {
  // a = torch.tensor([1., 2., 3.], requires_grad=True); b = torch.tensor([1., 5., 0.], ...)
  // torch.maximum(a, b).backward(torch.tensor([4., 4., 4.])) -> a.grad [2, 0, 4], b.grad [2, 4, 0]
  for (bool is_max : {true, false}) {
    Tensor a = from_vector<double>({1, 2, 3}).requires_grad_();
    Tensor b = from_vector<double>({1, 5, 0}).requires_grad_();
    (is_max ? maximum(a, b) : minimum(a, b)).backward(full({3}, 4.0, {.dtype = kFloat64}));
    CHECK(a.grad().to_vector<double>() == (is_max ? std::vector<double>{2, 0, 4} : std::vector<double>{2, 4, 0}));
    CHECK(b.grad().to_vector<double>() == (is_max ? std::vector<double>{2, 4, 0} : std::vector<double>{2, 0, 4}));
  }
}

TEST_CASE("pow gradients at zero bases and zero exponents match PyTorch") {
  // a = torch.tensor([0., 0., 2., 0.], dtype=torch.float64, requires_grad=True)
  // b = torch.tensor([0., 2., 0., 0.5], dtype=torch.float64, requires_grad=True)
  // torch.pow(a, b).backward(torch.ones(4, dtype=torch.float64))
  // a.grad -> [0., 0., 0., inf], b.grad -> [0., 0., 0.6931471805599453, 0.]
  Tensor a = from_vector<double>({0, 0, 2, 0}).requires_grad_();
  Tensor b = from_vector<double>({0, 2, 0, 0.5}).requires_grad_();
  ember::pow(a, b).backward(ones({4}, {.dtype = kFloat64}));
  check_close(values_of(a.grad()), {0, 0, 0, INFINITY}, {0, 0}, "base");
  check_close(values_of(b.grad()), {0, 0, 0.6931471805599453, 0}, {1e-15, 0}, "exponent");
  // torch.pow(x, 0.).backward(...) gives zeros even at x == 0.
  Tensor x = from_vector<double>({0, 1.5}).requires_grad_();
  ember::pow(x, 0.0).backward(ones({2}, {.dtype = kFloat64}));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0});
}

TEST_CASE("activation backward ops agree in float32 and float64") {
  const std::vector<double> values = random_values(64, -5, 5, 101);
  const std::vector<std::pair<std::string, Unary>> cases{
      {"relu", [](const Tensor& a) { return relu(a); }},       {"gelu", [](const Tensor& a) { return gelu(a); }},
      {"gelu tanh", [](const Tensor& a) { return gelu(a, true); }}, {"silu", [](const Tensor& a) { return silu(a); }},
      {"sigmoid", [](const Tensor& a) { return sigmoid(a); }}, {"tanh", [](const Tensor& a) { return ember::tanh(a); }},
  };
  for (const auto& [name, op] : cases) {
    std::vector<double> grads[2];
    for (int i = 0; i < 2; ++i) {
      Tensor x = tensor_from(values, {8, 8}, i == 0 ? kFloat32 : kFloat64).requires_grad_();
      op(x).backward(tensor_from(random_values(64, -1, 1, 7), {8, 8}, x.dtype()));
      CHECK_MESSAGE(x.grad().dtype() == x.dtype(), name);
      grads[i] = values_of(x.grad());
    }
    check_close(grads[0], grads[1], {2e-5, 1e-6}, name + " float32 vs float64");
  }
  CHECK(registry().get("relu_backward").functor == "ember::fn::ReluBackward");
  CHECK(registry().get("gelu_backward").kind == OpKind::Pointwise);
}

TEST_CASE("comparisons and integer results record no gradient") {
  const Tensor x = from_vector<float>({1.f, -2.f}).requires_grad_();
  CHECK_FALSE(gt(x, zeros({})).requires_grad());
  CHECK(gt(x, zeros({})).grad_fn() == nullptr);
  CHECK(relu(x).requires_grad());
  CHECK_FALSE(relu(from_vector<int32_t>({1, -2})).requires_grad());
}

TEST_CASE("relu's gradient follows PyTorch's threshold_backward: zero where the output is <= 0, else grad") {
  // torch.relu(x).backward(g) for x = [nan, 1, -1, 0, -0, inf, -inf] gives [g0, g1, 0, 0, 0, g5, 0]:
  // a NaN output is not <= 0, so its gradient passes.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    CAPTURE(dtype_name(dtype));
    Tensor x = from_vector<float>({nan, 1.0f, -1.0f, 0.0f, -0.0f, inf, -inf}).to(dtype).requires_grad_();
    relu(x).backward(from_vector<float>({2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f}).to(dtype));
    CHECK(values_of(x.grad()) == std::vector<double>{2.0, 3.0, 0.0, 0.0, 0.0, 7.0, 0.0});
  }
}

}  // namespace test_pointwise_backward
