// retain_grad() on a non-leaf, as PyTorch defines it: .grad holds the gradient every hook of the
// tensor has shaped, whichever was registered first, and the gradient of the tensor's latest
// version when an in-place op changed it after the call; recorded under create_graph.
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "runtime/ember.h"

namespace test_autograd_retain_grad {

using namespace ember;

namespace {
std::vector<double> values(const Tensor& tensor) {
  REQUIRE(tensor.defined());
  return tensor.to_vector<double>();
}
}  // namespace

TEST_CASE("retain_grad: .grad is the gradient after every hook, also hooks registered later") {
  const Tensor x = ones({3}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = mul(x, 2.0);
  y.retain_grad();
  CHECK(y.retains_grad());
  y.register_hook([](const Tensor& grad) { return mul(grad, 10.0); });
  mul(y, 3.0).sum().backward();
  // d(sum 3y)/dy = 3, times 10 by the hook; x sees the hooked gradient through y = 2x.
  CHECK(values(y.grad()) == std::vector<double>{30.0, 30.0, 30.0});
  CHECK(values(x.grad()) == std::vector<double>{60.0, 60.0, 60.0});
}

TEST_CASE("retain_grad: an in-place op after the call moves it to the tensor's latest version") {
  const Tensor x = from_vector(std::vector<double>{1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = mul(x, 2.0);
  y.retain_grad();
  y.mul_(5.0);                       // y is now 10x: its gradient is that of the new version
  mul(y, y).sum().backward();        // d(sum y^2)/dy = 2y = 20x
  CHECK(values(y.grad()) == std::vector<double>{20.0, 40.0, 60.0});
  CHECK(values(x.grad()) == std::vector<double>{200.0, 400.0, 600.0});
  CHECK(y.retains_grad());
}

TEST_CASE("retain_grad: an in-place op through a view moves it to the base's new history") {
  const Tensor x = from_vector(std::vector<double>{1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = mul(x, 1.0);
  y.retain_grad();
  y.narrow(0, 0, 1).mul_(4.0);       // y = [4, 2, 3]
  mul(y, 2.0).sum().backward();
  CHECK(values(y.grad()) == std::vector<double>{2.0, 2.0, 2.0});
  CHECK(values(x.grad()) == std::vector<double>{8.0, 2.0, 2.0});
}

TEST_CASE("retain_grad: a view remade after its base changed keeps retaining") {
  const Tensor x = from_vector(std::vector<double>{1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor base = mul(x, 1.0);
  Tensor view = base.narrow(0, 1, 2);
  view.retain_grad();
  base.mul_(3.0);                    // the view's history is remade from the base's new one
  mul(view, view).sum().backward();  // view = [6, 9]: d/dview = 2 view
  CHECK(values(view.grad()) == std::vector<double>{12.0, 18.0});
  CHECK(values(x.grad()) == std::vector<double>{0.0, 36.0, 54.0, 0.0});
}

TEST_CASE("retain_grad: hooks registered before an in-place op stay with the old version") {
  const Tensor x = ones({2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = mul(x, 1.0);
  std::vector<double> seen;
  y.register_hook([&](const Tensor& grad) {
    seen = grad.to_vector<double>();
    return Tensor();
  });
  y.retain_grad();
  y.mul_(2.0);
  mul(y, 7.0).sum().backward();
  CHECK(seen == std::vector<double>{14.0, 14.0});  // d/d(old y) = 7 * 2
  CHECK(values(y.grad()) == std::vector<double>{7.0, 7.0});
}

TEST_CASE("retain_grad: later gradients are added out of place, and detach_() stops retaining") {
  const Tensor x = ones({2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor y = mul(x, 2.0);
  y.retain_grad();
  y.sum().backward({}, /*retain_graph=*/true);
  const Tensor first = y.grad();
  y.sum().backward({}, /*retain_graph=*/true);
  CHECK(values(first) == std::vector<double>{1.0, 1.0});  // the tensor the user held is unchanged
  CHECK(values(y.grad()) == std::vector<double>{2.0, 2.0});

  Tensor z = mul(x, 3.0);
  const Tensor loss = z.sum();
  z.retain_grad();
  z.detach_();
  CHECK_FALSE(z.retains_grad());
  loss.backward();
  CHECK_FALSE(z.grad().defined());
}

TEST_CASE("retain_grad: a leaf retains by itself, and a tensor dropped before backward costs nothing") {
  Tensor leaf = ones({2}, {.requires_grad = true});
  leaf.retain_grad();
  CHECK_FALSE(leaf.retains_grad());
  const Tensor x = ones({2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor loss;
  {
    Tensor y = mul(x, 2.0);
    y.retain_grad();
    loss = y.sum();
  }
  loss.backward();
  CHECK(values(x.grad()) == std::vector<double>{2.0, 2.0});
}

TEST_CASE("retain_grad: under create_graph the .grad carries history, as PyTorch's retains-grad hook") {
  const Tensor x = from_vector(std::vector<double>{1.0, 2.0}).requires_grad_();
  {
    Tensor y = mul(x, x);
    y.retain_grad();
    mul(y, y).sum().backward({}, std::nullopt, /*create_graph=*/true);
    const Tensor retained = y.grad();
    CHECK(values(retained) == std::vector<double>{2.0, 8.0});  // 2y
    REQUIRE(retained.requires_grad());
    // d/dx sum(y.grad * x) = d/dx sum(2 x^3) = 6 x^2; a constant y.grad would give 2y = [2, 8].
    CHECK(values(autograd::grad({mul(retained, x).sum()}, {x})[0]) == std::vector<double>{6.0, 24.0});
    y.set_grad(Tensor());  // a .grad with history holds its tensor: the cycle ARCHITECTURE.md names
  }
  {
    // A second create_graph backward adds out of place, recorded: y.grad = 4y = 4x^2, d/dx sum = 8x.
    Tensor y = mul(x, x);
    y.retain_grad();
    const Tensor loss = mul(y, y).sum();
    loss.backward({}, std::nullopt, /*create_graph=*/true);
    const Tensor first = y.grad();
    loss.backward({}, std::nullopt, /*create_graph=*/true);
    CHECK(values(first) == std::vector<double>{2.0, 8.0});
    CHECK(values(y.grad()) == std::vector<double>{4.0, 16.0});
    CHECK(values(autograd::grad({y.grad().sum()}, {x})[0]) == std::vector<double>{8.0, 16.0});
    y.set_grad(Tensor());
  }
  // A plain backward records nothing.
  Tensor z = mul(x, 3.0);
  z.retain_grad();
  mul(z, z).sum().backward();
  CHECK_FALSE(z.grad().requires_grad());
  Tensor(x).set_grad(Tensor());  // x's .grad kept the history of the create_graph backwards above
}

}  // namespace test_autograd_retain_grad
