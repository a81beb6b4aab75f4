// backward(inputs) as torch's backward(inputs=...): only the given tensors' .grad accumulate
// (non-leaves through retain_grad, as PyTorch), every other .grad and hook stays untouched; and
// autograd::grad's materialize_grads (zeros for unused inputs).
#include <doctest/doctest.h>

#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_backward_inputs {

using namespace ember;
using ember::testing::error_of;
using ember::testing::leaf_of;
using ember::testing::names_line;
using ember::testing::values_of;

TEST_CASE("backward(inputs): only the given leaves' .grad accumulate") {
  const Tensor x = leaf_of({1.0, -2.0, 3.0});
  Tensor w = leaf_of({0.5, 4.0, -1.5});
  Tensor b = leaf_of({2.0, 2.0, 2.0});
  b.set_grad(full({3}, 7.0, {.dtype = kFloat64}));
  const Tensor held = b.grad();
  int b_hook_calls = 0;
  b.register_hook([&](const Tensor& grad) {
    ++b_hook_calls;
    return grad;
  });
  const Tensor y = add(mul(x, w), b).sum();
  y.backward({}, std::nullopt, false, std::vector<Tensor>{w});
  REQUIRE(w.grad().defined());
  CHECK(values_of(w.grad()) == values_of(x));  // d sum(x w + b) / dw = x
  CHECK_FALSE(x.grad().defined());
  CHECK(b.grad().impl() == held.impl());  // untouched: not even replaced
  CHECK(values_of(b.grad()) == std::vector<double>(3, 7.0));
  CHECK(b_hook_calls == 0);
  // A second pass accumulates, as backward() does; two inputs, in either order.
  const Tensor z = add(mul(x, w), b).sum();
  z.backward({}, std::nullopt, false, std::vector<Tensor>{b, w});
  CHECK(values_of(w.grad()) == std::vector<double>{2.0, -4.0, 6.0});
  CHECK(values_of(b.grad()) == std::vector<double>(3, 8.0));
  CHECK(b_hook_calls == 1);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("backward(inputs): a non-leaf input keeps its gradient in .grad, as PyTorch") {
  const Tensor x = leaf_of({1.0, 2.0});
  Tensor h = mul(x, 2.0);
  const Tensor y = mul(h, h).sum();
  CHECK_FALSE(h.retains_grad());
  y.backward({}, true, false, std::vector<Tensor>{h});
  REQUIRE(h.grad().defined());
  CHECK(values_of(h.grad()) == std::vector<double>{4.0, 8.0});  // 2h
  CHECK_FALSE(x.grad().defined());
  CHECK(h.retains_grad());  // for good, as PyTorch's run_backward calls retain_grad()
  // With the leaf beyond it: both, the non-leaf's .grad accumulating.
  y.backward({}, std::nullopt, false, std::vector<Tensor>{h, x});
  CHECK(values_of(h.grad()) == std::vector<double>{8.0, 16.0});
  CHECK(values_of(x.grad()) == std::vector<double>{8.0, 16.0});  // 8x
}

TEST_CASE("backward(inputs): several roots, seeds and create_graph") {
  const Tensor x = leaf_of({1.0, 2.0, 3.0});
  Tensor w = leaf_of({3.0, 3.0, 3.0});
  const Tensor first = mul(x, w);
  const Tensor second = mul(w, w);
  const Tensor seed = from_vector<double>({1.0, -1.0, 2.0}, {3}, {.dtype = kFloat64});
  ember::backward({first, second.sum()}, {seed, Tensor()}, std::nullopt, /*create_graph=*/true, std::vector<Tensor>{w});
  REQUIRE(w.grad().defined());
  CHECK(values_of(w.grad()) == std::vector<double>{7.0, 4.0, 12.0});  // x seed + 2w
  CHECK(w.grad().requires_grad());  // recorded: differentiable again
  CHECK_FALSE(x.grad().defined());
  const Tensor second_order = autograd::grad({w.grad().sum()}, {w})[0];
  CHECK(values_of(second_order) == std::vector<double>(3, 2.0));
  w.set_grad(Tensor());  // breaks the create_graph cycle (ARCHITECTURE.md)
}

TEST_CASE("backward(inputs): an input the roots do not reach gets nothing, as in PyTorch") {
  const Tensor x = leaf_of({1.0, 2.0});
  const Tensor elsewhere = leaf_of({5.0});
  mul(x, x).sum().backward({}, std::nullopt, false, std::vector<Tensor>{elsewhere});
  CHECK_FALSE(elsewhere.grad().defined());
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("backward(inputs): refuses bad inputs before changing anything, naming them and the call site") {
  const Tensor x = leaf_of({1.0, 2.0, 3.0});
  const Tensor constant = ones({3}, {.dtype = kFloat64});
  const Tensor h = mul(x, 2.0);
  const Tensor y = mul(h, x).sum();
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { y.backward({}, true, false, std::vector<Tensor>{h, constant}); });
  CHECK(message.find("backward: input 1 (shape [3]) does not require grad, so it has no .grad to accumulate") !=
        std::string::npos);
  CHECK(names_line(message, line));
  CHECK_FALSE(h.retains_grad());  // checked before the first input was retained
  CHECK_FALSE(x.grad().defined());
  message = error_of([&] { ember::backward({y}, {}, true, false, std::vector<Tensor>{}); });
  CHECK(message.find("backward: inputs is empty; pass the tensors whose .grad to accumulate") != std::string::npos);
  CHECK(error_of([&] { y.backward({}, true, false, std::vector<Tensor>{Tensor()}); })
            .find("backward: input 0 is an undefined tensor") != std::string::npos);
  // The graph is still whole: nothing ran.
  y.backward({}, std::nullopt, false, std::vector<Tensor>{x});
  CHECK(values_of(x.grad()) == std::vector<double>{4.0, 8.0, 12.0});  // 4x
}

TEST_CASE("autograd::grad: materialize_grads gives unused inputs zeros of their shape and dtype") {
  const Tensor x = leaf_of({1.0, 2.0});
  const Tensor unused = randn({2, 3}).requires_grad_();
  const Tensor y = mul(x, x).sum();
  const std::vector<Tensor> grads =
      autograd::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/std::nullopt, /*materialize_grads=*/true);
  CHECK(values_of(grads[0]) == std::vector<double>{2.0, 4.0});
  REQUIRE(grads[1].defined());
  CHECK(grads[1].sizes() == Dims{2, 3});
  CHECK(grads[1].dtype() == kFloat32);
  CHECK(grads[1].device() == unused.device());
  CHECK(grads[1].to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(grads[1].requires_grad());  // as PyTorch's zeros_like(input, requires_grad=True)
  // allow_unused=true says the same; allow_unused=false contradicts it (PyTorch's ValueError).
  CHECK(autograd::grad({y}, {unused, x}, {}, true, false, true, true)[0].sizes() == Dims{2, 3});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { autograd::grad({y}, {x, unused}, {}, true, false, false, true); });
  CHECK(message.find("autograd::grad: materialize_grads=true needs allow_unused true or unset, got "
                     "allow_unused=false") != std::string::npos);
  CHECK(names_line(message, line));
  // Used inputs are never replaced, and without it an unused input stays undefined or an error.
  CHECK_FALSE(autograd::grad({y}, {x, unused}, {}, true, false, true)[1].defined());
  CHECK(error_of([&] { autograd::grad({y}, {x, unused}, {}, true); }).find("was not used") != std::string::npos);
}

}  // namespace test_backward_inputs
