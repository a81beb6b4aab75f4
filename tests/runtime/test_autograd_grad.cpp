// autograd::grad (runtime/autograd/grad.h) as torch.autograd.grad: gradients returned, never
// accumulated; leaf and non-leaf inputs; allow_unused; retain_graph defaulting to create_graph;
// hooks and retain_grad() on the way; the errors.
#include <doctest/doctest.h>

#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_autograd_grad {

using namespace ember;
using ember::testing::error_of;
using ember::testing::leaf_of;
using ember::testing::names_line;
using ember::testing::values_of;

TEST_CASE("autograd::grad: returns the gradients and changes no .grad") {
  const Tensor x = leaf_of({1.0, -2.0, 3.0});
  Tensor w = leaf_of({0.5, 4.0, -1.5});
  const Tensor other = leaf_of({2.0, 2.0, 2.0});
  w.set_grad(full({3}, 7.0, {.dtype = kFloat64}));
  const Tensor held = w.grad();
  const Tensor y = add(mul(x, w), other).sum();
  const std::vector<Tensor> grads = autograd::grad({y}, {x});
  REQUIRE(grads.size() == 1);
  CHECK(values_of(grads[0]) == values_of(w));  // d sum(x w + other) / dx = w
  CHECK_FALSE(grads[0].requires_grad());  // without create_graph: no history
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(other.grad().defined());  // its accumulator is not on the way to x: it never runs
  CHECK(w.grad().impl() == held.impl());
  CHECK(values_of(w.grad()) == std::vector<double>(3, 7.0));
}

TEST_CASE("autograd::grad: non-leaf inputs get what their grad_fn received, alone or with leaves") {
  const Tensor x = leaf_of({1.0, 2.0});
  const Tensor h = mul(x, 2.0);
  const Tensor y = mul(h, h).sum();
  CHECK(values_of(autograd::grad({y}, {h}, {}, true)[0]) == std::vector<double>{4.0, 8.0});  // 2h
  const std::vector<Tensor> both = autograd::grad({y}, {x, h});
  CHECK(values_of(both[0]) == std::vector<double>{8.0, 16.0});  // 8x
  CHECK(values_of(both[1]) == std::vector<double>{4.0, 8.0});
  CHECK_FALSE(x.grad().defined());
  // An output that is itself an input: its seed.
  CHECK(values_of(autograd::grad({x.sum()}, {x})[0]) == std::vector<double>{1.0, 1.0});
  const Tensor seed = from_vector<double>({3.0, -1.0}, {2}, {.dtype = kFloat64});
  CHECK(values_of(autograd::grad({h}, {h}, {seed})[0]) == std::vector<double>{3.0, -1.0});
}

TEST_CASE("autograd::grad: several outputs with their grad_outputs sum, as torch.autograd.grad") {
  const Tensor x = leaf_of({1.0, 2.0, 3.0});
  const Tensor first = mul(x, 3.0);
  const Tensor second = mul(x, x);
  const Tensor v = from_vector<double>({1.0, -1.0, 2.0}, {3}, {.dtype = kFloat64});
  const Tensor u = from_vector<double>({0.5, 0.5, 0.5}, {3}, {.dtype = kFloat64});
  // 3 v + 2 x u
  CHECK(values_of(autograd::grad({first, second}, {x}, {v, u})[0]) == std::vector<double>{4.0, -1.0, 9.0});
  // A float32 seed is cast to the output's dtype.
  const Tensor seed32 = ones({3});
  CHECK(autograd::grad({first}, {x}, {seed32})[0].dtype() == kFloat64);
}

TEST_CASE("autograd::grad: retain_graph defaults to create_graph") {
  const Tensor x = leaf_of({1.0, 2.0});
  const Tensor y = exp(x).sum();  // exp saves its output
  autograd::grad({y}, {x});
  CHECK(error_of([&] { autograd::grad({y}, {x}); }).find("backward through the graph a second time") !=
        std::string::npos);
  const Tensor z = exp(x).sum();
  autograd::grad({z}, {x}, {}, /*retain_graph=*/true);
  CHECK(values_of(autograd::grad({z}, {x})[0]) == values_of(exp(x).detach()));
  const Tensor w = exp(x).sum();
  autograd::grad({w}, {x}, {}, std::nullopt, /*create_graph=*/true);  // retains
  CHECK(values_of(autograd::grad({w}, {x})[0]) == values_of(exp(x).detach()));
}

TEST_CASE("autograd::grad: an input the outputs do not use is an error unless allow_unused") {
  const Tensor x = leaf_of({1.0, 2.0});
  const Tensor unused = leaf_of({5.0});
  const Tensor y = mul(x, x).sum();
  const std::string message = error_of([&] { autograd::grad({y}, {x, unused}, {}, true); });
  CHECK(message.find("autograd::grad: input 1 (shape [1]) was not used in the graph of the outputs") !=
        std::string::npos);
  CHECK(message.find("allow_unused=true") != std::string::npos);
  const std::vector<Tensor> grads = autograd::grad({y}, {x, unused}, {}, std::nullopt, false, /*allow_unused=*/true);
  CHECK(values_of(grads[0]) == std::vector<double>{2.0, 4.0});
  CHECK_FALSE(grads[1].defined());
}

TEST_CASE("autograd::grad: refuses bad arguments, naming the argument and the call site") {
  const Tensor x = leaf_of({1.0, 2.0, 3.0});
  const Tensor constant = ones({3}, {.dtype = kFloat64});
  const Tensor y = mul(x, 2.0);
  const int line = __LINE__ + 1;
  std::string message = error_of([&] { autograd::grad({y.sum()}, {constant}); });
  CHECK(message.find("autograd::grad: input 0 (shape [3]) does not require grad") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { autograd::grad({constant.sum()}, {x}); })
            .find("autograd::grad: output 0 (shape []) does not require grad and has no grad_fn") != std::string::npos);
  CHECK(error_of([&] { autograd::grad({y}, {x}); })
            .find("grad can be implicitly created only for scalar outputs; output 0 has shape [3]") !=
        std::string::npos);
  CHECK(error_of([&] { autograd::grad({y}, {x}, {ones({3}), ones({3})}); })
            .find("autograd::grad: got 1 outputs but 2 gradients") != std::string::npos);
  CHECK(error_of([&] { autograd::grad({y}, {x}, {ones({2})}); })
            .find("autograd::grad: the gradient of output 0 has shape [2] but the output has shape [3]") !=
        std::string::npos);
  CHECK(error_of([&] { autograd::grad({y.sum()}, {}); }).find("autograd::grad: inputs is empty") != std::string::npos);
  CHECK(error_of([&] { autograd::grad({}, {x}); }).find("autograd::grad: outputs is empty") != std::string::npos);
  CHECK(error_of([&] { autograd::grad({y.sum()}, {Tensor()}); })
            .find("autograd::grad: input 0 is an undefined tensor") != std::string::npos);
}

TEST_CASE("autograd::grad: hooks on the inputs and on the way run, other leaves' hooks do not") {
  Tensor x = leaf_of({1.0, 2.0});
  Tensor other = leaf_of({3.0, 4.0});
  int other_hook_calls = 0;
  x.register_hook([](const Tensor& grad) { return mul(grad, 10.0); });
  other.register_hook([&](const Tensor& grad) {
    ++other_hook_calls;
    return grad;
  });
  Tensor h = mul(x, other);
  int h_hook_calls = 0;
  h.register_hook([&](const Tensor& grad) {
    ++h_hook_calls;
    return mul(grad, 2.0);
  });
  const Tensor y = h.sum();
  // d/dx = 2 (h's hook) * other * 10 (x's hook)
  CHECK(values_of(autograd::grad({y}, {x}, {}, true)[0]) == std::vector<double>{60.0, 80.0});
  CHECK(h_hook_calls == 1);
  CHECK(other_hook_calls == 0);
  CHECK_FALSE(x.grad().defined());
  // A non-leaf input's own hook shapes its gradient.
  CHECK(values_of(autograd::grad({y}, {h}, {}, true)[0]) == std::vector<double>{2.0, 2.0});
  // As PyTorch's engine: when an input's node also runs (another input lies beyond it), its
  // gradient is taken before its hooks; the inputs beyond see the hooked one.
  const std::vector<Tensor> both = autograd::grad({y}, {x, h});
  CHECK(values_of(both[0]) == std::vector<double>{60.0, 80.0});
  CHECK(values_of(both[1]) == std::vector<double>{1.0, 1.0});
}

TEST_CASE("autograd::grad: retain_grad() tensors on the way get their .grad, as in PyTorch") {
  // PyTorch's engine runs a tensor's retains-grad hook wherever it runs its tensor hooks, in
  // torch.autograd.grad too (engine.cpp call_tensor_pre_hooks); tensors off the way get nothing.
  const Tensor x = leaf_of({1.0, 2.0});
  const Tensor other = leaf_of({3.0, 4.0});
  Tensor on_the_way = mul(x, 3.0);
  Tensor off_the_way = mul(other, 5.0);
  on_the_way.retain_grad();
  off_the_way.retain_grad();
  const Tensor y = mul(on_the_way, off_the_way).sum();
  autograd::grad({y}, {x});
  REQUIRE(on_the_way.grad().defined());
  CHECK(values_of(on_the_way.grad()) == std::vector<double>{15.0, 20.0});
  CHECK_FALSE(off_the_way.grad().defined());
  CHECK_FALSE(x.grad().defined());
}

}  // namespace test_autograd_grad
