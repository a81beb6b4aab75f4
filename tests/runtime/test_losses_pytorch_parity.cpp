// Where ember's losses once differed from PyTorch's (2.x, CPU) for the same call: result dtypes of
// mixed float32 / float64 arguments that follow from PyTorch computing into a tensor it made from
// one argument. Expected values are float64 loops of PyTorch's formulas.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "composite_loss_checks.h"
#include "numeric_check.h"

namespace test_losses_pytorch_parity {

using namespace ember;
using namespace ember::testing;

namespace {

double huber_reference(double difference, double delta) {
  const double z = std::abs(difference);
  return z < delta ? 0.5 * z * z : delta * (z - 0.5 * delta);
}

// log(1 + exp(z)) without overflow.
double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }

// Each value rounded to float32, as PyTorch stores a float64 result into a float32 tensor.
std::vector<double> rounded_to_float(std::vector<double> values) {
  for (double& value : values) value = static_cast<double>(static_cast<float>(value));
  return values;
}

}  // namespace

TEST_CASE("huber_loss of a float32 input and a float64 target is float32, as PyTorch's empty_like(input)") {
  // PyTorch's huber_loss computes in the inputs' common dtype into loss = empty_like(input): a
  // float32 input keeps the losses float32 (its l1_loss, smooth_l1_loss and mse_loss promote).
  const Tensor input = random_tensor({3, 4}, 21, kFloat32), target = random_tensor({3, 4}, 22);
  const std::vector<double> x = values_of(input), y = values_of(target);
  std::vector<double> losses;
  for (size_t i = 0; i < x.size(); ++i) losses.push_back(huber_reference(x[i] - y[i], 0.75));
  const std::vector<double> stored = rounded_to_float(losses);
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    const Tensor result = huber_loss(input, target, reduction, 0.75);
    CHECK(result.dtype() == kFloat32);
    check_close(result, reduced(stored, reduction), 1e-6);
  }
  // The other order promotes: the input is float64.
  CHECK(huber_loss(target, input, Reduction::Mean, 0.75).dtype() == kFloat64);
  // Gradients come back in each argument's own dtype.
  const Tensor leaf_input = input.detach().requires_grad_(), leaf_target = target.detach().requires_grad_();
  huber_loss(leaf_input, leaf_target, Reduction::Sum, 0.75).backward();
  CHECK(leaf_input.grad().dtype() == kFloat32);
  CHECK(leaf_target.grad().dtype() == kFloat64);
  std::vector<double> slope;
  for (size_t i = 0; i < x.size(); ++i) slope.push_back(std::clamp(x[i] - y[i], -0.75, 0.75));
  check_close(leaf_input.grad(), slope, 1e-6);
}

TEST_CASE("binary_cross_entropy_with_logits takes the target's dtype, as PyTorch's (1 - target).mul_(input)") {
  // PyTorch: loss = (1 - target).mul_(input).sub_(log_sigmoid(input) * (1 + (p - 1) target)), then
  // loss.mul_(weight): every step in place in a tensor of the target's dtype.
  const Tensor logits = mul(random_tensor({2, 3}, 23), 3.0);  // float64
  const Tensor target = from_vector<float>({0.0f, 1.0f, 0.25f, 1.0f, 0.5f, 0.0f}, {2, 3});
  const Tensor weight = from_vector<double>({0.5, 2.0, 1.5}, {3});
  const Tensor pos_weight = from_vector<double>({3.0, 0.5, 1.0}, {3});
  const std::vector<double> x = values_of(logits), y = values_of(target);
  std::vector<double> losses;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = i % 3;
    const double p = values_of(pos_weight)[c], w = values_of(weight)[c];
    // -w (p y log sigmoid(x) + (1 - y) log sigmoid(-x)), log sigmoid(x) = -softplus(-x).
    losses.push_back(w * (p * y[i] * softplus(-x[i]) + (1 - y[i]) * softplus(x[i])));
  }
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    const Tensor result = binary_cross_entropy_with_logits(logits, target, weight, reduction, pos_weight);
    CHECK(result.dtype() == kFloat32);
    check_close(result, reduced(rounded_to_float(losses), reduction), 1e-6);
  }
  // A float64 target with a float32 input promotes, as (1 - target) is float64 there.
  CHECK(binary_cross_entropy_with_logits(logits.to(kFloat32), target.to(kFloat64)).dtype() == kFloat64);
  const Tensor leaf = logits.detach().requires_grad_();
  binary_cross_entropy_with_logits(leaf, target, weight, Reduction::Sum, pos_weight).backward();
  CHECK(leaf.grad().dtype() == kFloat64);
}

namespace {

// The gradients of sum(loss(leaves)) w.r.t. each leaf, as doubles.
std::vector<std::vector<double>> gradients_of(const std::vector<Tensor>& inputs,
                                              const std::function<Tensor(const std::vector<Tensor>&)>& loss) {
  std::vector<Tensor> leaves;
  for (const Tensor& input : inputs) leaves.push_back(input.detach().clone().requires_grad_());
  sum(loss(leaves)).backward();
  std::vector<std::vector<double>> grads;
  for (const Tensor& leaf : leaves) grads.push_back(values_of(leaf.grad()));
  return grads;
}

double sign_of(double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }

}  // namespace

TEST_CASE("the pointwise and margin losses take PyTorch's subgradients exactly at their kinks") {
  // Differences exactly at 0 and at +-beta / +-delta (all exact in binary).
  const Tensor input = from_vector<double>({1.5, 0.5, 1.0, 0.25}), target = from_vector<double>({1.0, 1.0, 1.0, 0.75});
  const std::vector<double> x = values_of(input), y = values_of(target);
  const double beta = 0.5, delta = 0.5;
  std::vector<double> l1, smooth, huber;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = x[i] - y[i];
    l1.push_back(sign_of(d));  // PyTorch: sgn(x - y), 0 at 0
    // smooth_l1_backward: -1 below -beta, 1 above beta, d / beta between (bounds included).
    smooth.push_back(d < -beta ? -1.0 : d > beta ? 1.0 : d / beta);
    // huber_backward: -delta below -delta, delta above delta, d between.
    huber.push_back(d < -delta ? -delta : d > delta ? delta : d);
  }
  const auto through = [](auto f) {
    return [f](const std::vector<Tensor>& in) { return f(in[0], in[1]); };
  };
  auto grads = gradients_of({input, target}, through([](const Tensor& a, const Tensor& b) {
                              return l1_loss(a, b, Reduction::Sum);
                            }));
  check_close(grads[0], l1, 0.0);
  grads = gradients_of({input, target}, through([&](const Tensor& a, const Tensor& b) {
                         return smooth_l1_loss(a, b, Reduction::Sum, beta);
                       }));
  check_close(grads[0], smooth, 1e-15);
  grads = gradients_of({input, target}, through([&](const Tensor& a, const Tensor& b) {
                         return huber_loss(a, b, Reduction::Sum, delta);
                       }));
  check_close(grads[0], huber, 1e-15);

  // hinge_embedding_loss and margin_ranking_loss clamp_min at 0, whose backward passes the
  // gradient where the argument is >= 0: at the kink too.
  const Tensor at_margin = from_vector<double>({1.0, 2.0});
  grads = gradients_of({at_margin}, [](const std::vector<Tensor>& in) {
    return hinge_embedding_loss(in[0], from_vector<double>({-1.0, -1.0}), {.margin = 1.0, .reduction = Reduction::Sum});
  });
  check_close(grads[0], {-1.0, 0.0}, 0.0);  // margin - x = 0 passes, -1 is clamped
  grads = gradients_of({from_vector<double>({1.0, 0.0}), from_vector<double>({1.0, 0.5})},
                       [](const std::vector<Tensor>& in) {
                         return margin_ranking_loss(in[0], in[1], from_vector<double>({1.0, -1.0}),
                                                    {.margin = 0.0, .reduction = Reduction::Sum});
                       });
  // -y (x1 - x2) + margin: 0 for the first pair (passes), -0.5 for the second (clamped).
  check_close(grads[0], {-1.0, 0.0}, 0.0);
  check_close(grads[1], {1.0, 0.0}, 0.0);

  // triplet_margin_loss with margin + d(a, p) - d(a, n) exactly 0 (1-norms, eps 0): clamp_min
  // passes; the 1-norm's gradient at a zero difference is 0.
  grads = gradients_of({from_vector<double>({0.0, 0.0}, {1, 2}), from_vector<double>({1.0, 0.0}, {1, 2}),
                        from_vector<double>({2.0, 0.0}, {1, 2})},
                       [](const std::vector<Tensor>& in) {
                         return triplet_margin_loss(in[0], in[1], in[2],
                                                    {.margin = 1.0, .p = 1.0, .eps = 0.0, .reduction = Reduction::Sum});
                       });
  check_close(grads[0], {0.0, 0.0}, 0.0);   // -sign(a - n) + sign(a - p) cancel
  check_close(grads[1], {1.0, 0.0}, 0.0);   // -sign(a - p)
  check_close(grads[2], {-1.0, 0.0}, 0.0);  // sign(a - n)
}

TEST_CASE("l1_loss, smooth_l1_loss and kl_div take an integer target, as PyTorch's promoting formulas do") {
  // PyTorch: l1_loss is (input - target).abs(), smooth_l1_loss a promoting binary op (its backward
  // too), kl_div xlogy(target, target) - target * input: an int64 target computes as floating.
  const Tensor x32 = random_tensor({2, 3}, 31, kFloat32);
  const Tensor counts = from_vector<int64_t>({0, 1, 3, 2, 0, 1}, {2, 3});
  const std::vector<double> x = values_of(x32), y = values_of(counts);
  std::vector<double> l1, smooth, kl;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - y[i]);
    l1.push_back(d);
    smooth.push_back(d < 1.0 ? 0.5 * d * d : d - 0.5);
    kl.push_back((y[i] == 0 ? 0.0 : y[i] * std::log(y[i])) - y[i] * x[i]);
  }
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    const Tensor a = l1_loss(x32, counts, reduction), b = smooth_l1_loss(x32, counts, reduction);
    const Tensor c = kl_div(x32, counts, reduction);
    CHECK(a.dtype() == kFloat32);
    CHECK(b.dtype() == kFloat32);
    CHECK(c.dtype() == kFloat32);
    check_close(a, reduced(l1, reduction), 1e-6);
    check_close(b, reduced(smooth, reduction), 1e-6);
    check_close(c, reduced(kl, reduction), 1e-6);
  }
  // The input's gradient is the floating target's.
  const Tensor floating = counts.to(kFloat32);
  for (const auto& loss : std::vector<std::function<Tensor(const Tensor&, const Tensor&)>>{
           [](const Tensor& a, const Tensor& b) { return l1_loss(a, b, Reduction::Sum); },
           [](const Tensor& a, const Tensor& b) { return smooth_l1_loss(a, b, Reduction::Sum); },
           [](const Tensor& a, const Tensor& b) { return kl_div(a, b, Reduction::Sum); },
           [](const Tensor& a, const Tensor& b) { return kl_div(a, b, Reduction::Sum, true); }}) {
    const Tensor with_counts = x32.detach().requires_grad_(), with_floats = x32.detach().requires_grad_();
    loss(with_counts, counts).backward();
    loss(with_floats, floating).backward();
    CHECK(values_of(with_counts.grad()) == values_of(with_floats.grad()));
  }
  // A bool target is refused, as PyTorch's subtraction refuses bool.
  const Tensor mask = gt(x32, zeros_like(x32));
  CHECK_THROWS_WITH_AS(l1_loss(x32, mask),
                       doctest::Contains("l1_loss: expected a floating-point input and a floating-point or integer "
                                         "target, got float32 and bool"),
                       std::exception);
}

TEST_CASE("the margin and embedding losses name themselves when their operands do not broadcast") {
  // PyTorch reports these from the broadcasting op inside; ember names the loss and the shapes.
  const Tensor a = random_tensor({2, 3}, 41), b = random_tensor({2, 4}, 42), signs = from_vector<double>({1, -1});
  const auto refuses = [](const std::function<void()>& call, const std::string& expected) {
    CHECK_THROWS_WITH_AS(call(), doctest::Contains(expected.c_str()), std::exception);
  };
  refuses([&] { cosine_embedding_loss(a, b, signs); }, "cosine_embedding_loss: shapes [2, 3] and [2, 4] cannot be");
  refuses([&] { cosine_embedding_loss(a, a, from_vector<double>({1, -1, 1})); },
          "cosine_embedding_loss: shapes [2] and [3] cannot be");
  refuses([&] { margin_ranking_loss(a, b, a); }, "margin_ranking_loss: shapes [2, 3] and [2, 4] cannot be");
  refuses([&] { margin_ranking_loss(a, a, b); }, "margin_ranking_loss: shapes [2, 3] and [2, 4] cannot be");
  refuses([&] { hinge_embedding_loss(a, b); }, "hinge_embedding_loss: shapes [2, 3] and [2, 4] cannot be");
  refuses([&] { triplet_margin_loss(a, a, b); }, "triplet_margin_loss: shapes [2, 3] and [2, 4] cannot be");
  refuses([&] { multilabel_soft_margin_loss(a, a, {.weight = from_vector<double>({1, 2})}); },
          "multilabel_soft_margin_loss: shapes [2, 3] and [2] cannot be");
}

}  // namespace test_losses_pytorch_parity
