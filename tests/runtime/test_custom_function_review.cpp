// ember::autograd::Function beyond the basics: saved outputs and the graph's lifetime, threads, hooks
// on outputs, aliasing, odd arguments and outputs, nesting, and mark_dirty as libtorch treats it.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_custom_function_review {

using namespace ember;
using namespace ember::testing;
using autograd::AutogradContext;
using autograd::tensor_list;

namespace {

// A float64 leaf that requires grad, holding `values`.
Tensor leaf_values(const std::vector<double>& values) {
  Tensor t = small_tensor({static_cast<int64_t>(values.size())}, 1);
  double* data = t.data_ptr<double>();
  for (size_t i = 0; i < values.size(); ++i) data[i] = values[i];
  return t.requires_grad_();
}

// exp, saving its output: the node reaches its own output through the context.
struct ExpSavingOutput : autograd::Function<ExpSavingOutput> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor result = exp(x);
    ctx->save_for_backward({result});
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], ctx->get_saved_variables()[0])};
  }
};

// a * b, saving both inputs.
struct Product : autograd::Function<Product> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return mul(a, b);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const tensor_list saved = ctx->get_saved_variables();
    return {mul(grad_outputs[0], saved[1]), mul(grad_outputs[0], saved[0])};
  }
};

// Returns its input as-is: the caller gets an alias with the node as history.
struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) { return x; }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) { return {grad_outputs[0]}; }
};

// Records what needs_input_grad(0) said in forward.
struct NeedsProbe : autograd::Function<NeedsProbe> {
  static inline bool seen = true;
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    seen = ctx->needs_input_grad(0);
    return mul(x, 2.0);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) { return {mul(grad_outputs[0], 2.0)}; }
};

// Three outputs: 3x, an undefined tensor and an integer index; the second argument may be undefined.
struct WithUndefined : autograd::Function<WithUndefined> {
  static tensor_list forward(AutogradContext* ctx, const Tensor& x, const Tensor& maybe) {
    return {mul(x, 3.0), Tensor(), argmax(x)};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], 3.0), Tensor()};
  }
};

// 2 exp(x), computing exp(x) through another custom function inside forward.
struct Outer : autograd::Function<Outer> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor inner = ExpSavingOutput::apply(x);
    ctx->save_for_backward({inner});
    CHECK(!inner.requires_grad());
    return mul(inner, 2.0);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], mul(ctx->get_saved_variables()[0], 2.0))};
  }
};

// 2x whose backward returns a float32 gradient whatever the input's dtype.
struct Float32Grad : autograd::Function<Float32Grad> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) { return mul(x, 2.0); }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], 2.0).to(kFloat32)};
  }
};

}  // namespace

TEST_CASE("custom function review: a saved output does not keep its node alive") {
  std::weak_ptr<autograd::Node> node;
  {
    Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
    Tensor y = ExpSavingOutput::apply(x);
    node = y.grad_fn();
  }
  CHECK(node.expired());
}

TEST_CASE("custom function review: an input passed twice gets both gradients summed") {
  // d/dx sum(x * x) = 2x.
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0, 2.0});
  sum(Product::apply(x, x)).backward();
  const std::vector<double> g = values_of(x.grad());
  CHECK(g[0] == doctest::Approx(1.0));
  CHECK(g[1] == doctest::Approx(-2.0));
  CHECK(g[2] == doctest::Approx(4.0));
}

TEST_CASE("custom function review: hooks and retain_grad on an output") {
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
  Tensor y = Identity::apply(x);
  y.retain_grad();
  y.register_hook([](const Tensor& g) { return mul(g, 3.0); });
  sum(mul(y, 2.0)).backward();
  CHECK(values_of(y.grad())[0] == doctest::Approx(6.0));
  CHECK(values_of(x.grad())[0] == doctest::Approx(6.0));
}

TEST_CASE("custom function review: needs_input_grad under NoGradGuard") {
  Tensor x = leaf_values(std::vector<double>{0.5});
  NoGradGuard no_grad;
  NeedsProbe::apply(x);
  CHECK(!NeedsProbe::seen);
}

TEST_CASE("custom function review: an undefined argument, an undefined output and an integer output") {
  Tensor x = leaf_values(std::vector<double>{0.5, 3.0, 1.0});
  tensor_list out = WithUndefined::apply(x, Tensor());
  CHECK(!out[1].defined());
  CHECK(!out[2].requires_grad());
  sum(out[0]).backward();
  CHECK(values_of(x.grad())[0] == doctest::Approx(3.0));
}

TEST_CASE("custom function review: a function calling another in forward, and double backward through a saved output") {
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
  Tensor y = Outer::apply(x);
  sum(y).backward();
  CHECK(values_of(x.grad())[0] == doctest::Approx(2 * std::exp(0.5)));
  Tensor z = leaf_values(std::vector<double>{0.3, 0.7});
  Tensor first = autograd::grad({sum(ExpSavingOutput::apply(z))}, {z}, {}, std::nullopt, true)[0];
  Tensor second = autograd::grad({sum(first)}, {z})[0];
  CHECK(values_of(second)[1] == doctest::Approx(std::exp(0.7)));
}

TEST_CASE("custom function review: a float32 gradient for a float64 input") {
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
  sum(Float32Grad::apply(x)).backward();
  CHECK(x.grad().dtype() == kFloat64);
}

TEST_CASE("custom function review: eight threads backward through one retained graph") {
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
  Tensor loss = sum(ExpSavingOutput::apply(mul(x, 1.0)));
  std::vector<Tensor> grads(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) grads[t] = autograd::grad({loss}, {x}, {}, true)[0];
    });
  for (auto& th : threads) th.join();
  for (auto& g : grads) CHECK(values_of(g)[0] == doctest::Approx(std::exp(0.5)));
}

namespace {
// x + 1 written into x (mark_dirty), saving the modified x.
struct AddOneInPlace : autograd::Function<AddOneInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(ones(x.sizes(), {.dtype = x.dtype()}));
    ctx->mark_dirty({x});
    ctx->save_for_backward({x});
    return x;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    ctx->get_saved_variables();
    return {grad_outputs[0]};
  }
};
}  // namespace

TEST_CASE("custom function review: an input modified in place under NoGradGuard comes back as a detached alias") {
  // libtorch's _process_backward_mode_ad: a non-differentiable output that requires grad and is an
  // input is returned as var.detach(), dirty or not; the leaf itself keeps requires_grad.
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
  Tensor y;
  {
    NoGradGuard no_grad;
    y = AddOneInPlace::apply(x);
  }
  CHECK(!y.requires_grad());
  CHECK(y.impl() != x.impl());
  CHECK(x.requires_grad());
  CHECK(x.is_leaf());
  const std::vector<double> modified = values_of(y), through_x = values_of(x);
  CHECK(modified[0] == 1.5);
  CHECK(modified[1] == 0.0);
  CHECK(through_x == modified);  // the same memory
}

TEST_CASE("custom function review: a saved dirty input does not keep its node alive") {
  std::weak_ptr<autograd::Node> node;
  {
    Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
    Tensor h = mul(x, 1.0);
    Tensor y = AddOneInPlace::apply(h);
    node = y.grad_fn();
    sum(y).backward(Tensor(), true);
  }
  CHECK(node.expired());
}

namespace {
// Modifies both inputs in place and returns them; the second one is refused when it is a leaf
// that requires grad.
struct AddOneToBoth : autograd::Function<AddOneToBoth> {
  static tensor_list forward(AutogradContext* ctx, Tensor a, Tensor b) {
    a.add_(ones(a.sizes(), {.dtype = a.dtype()}));
    b.add_(ones(b.sizes(), {.dtype = b.dtype()}));
    ctx->mark_dirty({a, b});
    return {a, b};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) { return grad_outputs; }
};
}  // namespace

TEST_CASE("custom function review: a refused mark_dirty leaves every input's history as it was") {
  Tensor x = leaf_values(std::vector<double>{0.5, -1.0});
  Tensor b = leaf_values(std::vector<double>{2.0, 3.0});
  Tensor a = mul(x, 2.0);
  const std::shared_ptr<autograd::Node> before = a.grad_fn();
  const std::string message = error_of([&] { AddOneToBoth::apply(a, b); });
  CHECK(message.find("leaf") != std::string::npos);
  CHECK(a.grad_fn() == before);
}

namespace {
// a * b, recording what needs_input_grad said in backward.
struct ProductNeeds : autograd::Function<ProductNeeds> {
  static inline std::vector<bool> seen;
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return mul(a, b);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const tensor_list saved = ctx->get_saved_variables();
    seen = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    return {seen[0] ? mul(grad_outputs[0], saved[1]) : Tensor(), seen[1] ? mul(grad_outputs[0], saved[0]) : Tensor()};
  }
};
}  // namespace

TEST_CASE("custom function review: needs_input_grad inside autograd::grad is false for an input it does not ask for") {
  // libtorch's task_should_compute_output: an edge the graph task does not execute needs no gradient.
  Tensor a = leaf_values(std::vector<double>{0.5, -1.0});
  Tensor b = leaf_values(std::vector<double>{2.0, 3.0});
  Tensor y = sum(ProductNeeds::apply(a, b));
  const Tensor grad_a = autograd::grad({y}, {a}, {}, /*retain_graph=*/true)[0];
  CHECK(ProductNeeds::seen == std::vector<bool>{true, false});
  CHECK(values_of(grad_a) == std::vector<double>{2.0, 3.0});  // d/da sum(a b) = b
  const Tensor grad_b = autograd::grad({y}, {b}, {}, /*retain_graph=*/true)[0];
  CHECK(ProductNeeds::seen == std::vector<bool>{false, true});
  CHECK(values_of(grad_b) == std::vector<double>{0.5, -1.0});
  // b reached through another op still counts; a full backward needs both.
  Tensor z = sum(ProductNeeds::apply(a, mul(b, 2.0)));
  autograd::grad({z}, {b});
  CHECK(ProductNeeds::seen == std::vector<bool>{false, true});
  z = sum(ProductNeeds::apply(a, mul(b, 2.0)));
  z.backward();
  CHECK(ProductNeeds::seen == std::vector<bool>{true, true});
  CHECK(values_of(a.grad()) == std::vector<double>{4.0, 6.0});
}

}  // namespace test_custom_function_review
