// ember::autograd::Function (libtorch's custom autograd functions): gradients of user-written
// forward/backward pairs against the same math by built-in ops and against finite differences,
// the context's saved tensors, flags and values, and the errors for wrong backward results.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_custom_function {

using namespace ember;
using namespace ember::testing;
using autograd::AutogradContext;
using autograd::tensor_list;

namespace {

void check_same(const Tensor& actual, const Tensor& expected, double tolerance = 1e-12) {
  REQUIRE(actual.defined());
  REQUIRE(actual.sizes() == expected.sizes());
  const std::vector<double> a = values_of(actual), e = values_of(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element ", i, ": ", a[i], " vs ", e[i]);
    CHECK(std::abs(a[i] - e[i]) <= tolerance * (1.0 + std::abs(e[i])));
  }
}

// exp, saving its output: the gradient reads a tensor this node made.
struct CustomExp : autograd::Function<CustomExp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    Tensor result = exp(x);
    ctx->save_for_backward({result});
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], ctx->get_saved_variables()[0])};
  }
};

// sin, saving its input: the gradient reads the input.
struct CustomSin : autograd::Function<CustomSin> {
  static constexpr const char* name = "CustomSin";
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return sin(x);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], cos(ctx->get_saved_variables()[0]))};
  }
};

// y = x W^T + b with three tensor inputs; records which gradients backward was asked for.
struct CustomLinear : autograd::Function<CustomLinear> {
  static inline std::vector<bool> needs_seen;
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight, const Tensor& bias) {
    ctx->save_for_backward({x, weight});
    return add(matmul(x, weight.t()), bias);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const tensor_list saved = ctx->get_saved_variables();
    const Tensor& grad = grad_outputs[0];
    needs_seen = {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2)};
    Tensor grad_x = needs_seen[0] ? matmul(grad, saved[1]) : Tensor();
    Tensor grad_weight = needs_seen[1] ? matmul(grad.t(), saved[0]) : Tensor();
    Tensor grad_bias = needs_seen[2] ? sum(grad, {0}) : Tensor();
    return {grad_x, grad_weight, grad_bias};
  }
};

// Two outputs, sin and cos; records the gradients backward received.
struct SinCos : autograd::Function<SinCos> {
  static inline bool materialize = true;
  static inline tensor_list received;
  static tensor_list forward(AutogradContext* ctx, const Tensor& x) {
    ctx->set_materialize_grads(materialize);
    ctx->save_for_backward({x});
    return {sin(x), cos(x)};
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    received = grad_outputs;
    const Tensor x = ctx->get_saved_variables()[0];
    Tensor grad;
    if (grad_outputs[0].defined()) grad = mul(grad_outputs[0], cos(x));
    if (grad_outputs[1].defined())
      grad = grad.defined() ? sub(grad, mul(grad_outputs[1], sin(x))) : neg(mul(grad_outputs[1], sin(x)));
    return {grad};
  }
};

// x * c with non-tensor arguments around the tensor; backward returns one entry per argument.
struct ScaleBy : autograd::Function<ScaleBy> {
  static Tensor forward(AutogradContext* ctx, double c, const Tensor& x, int64_t repeat, const std::string& tag) {
    ctx->saved_data["c"] = c;
    ctx->saved_data["repeat"] = repeat;
    ctx->saved_data["tag"] = tag;
    ctx->saved_data["flag"] = true;
    return mul(x, c * static_cast<double>(repeat));
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    CHECK(ctx->saved_data["tag"].toStringRef() == "scaled");
    CHECK(ctx->saved_data["flag"].toBool());
    const double factor = ctx->saved_data["c"].toDouble() * static_cast<double>(ctx->saved_data["repeat"].toInt());
    return {Tensor(), mul(grad_outputs[0], factor), Tensor(), Tensor()};
  }
};

// A backward returning what the test asks for, to check the errors on wrong results.
struct Misbehaving : autograd::Function<Misbehaving> {
  static inline std::function<tensor_list(const Tensor&)> result;
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& x, double c) { return mul(x, c); }
  static tensor_list backward(AutogradContext* /*ctx*/, tensor_list grad_outputs) { return result(grad_outputs[0]); }
};

}  // namespace

TEST_CASE("custom function: exp and sin match the built-in ops and finite differences") {
  const Tensor x = leaf({3, 4}, 1), reference = x.detach().requires_grad_();
  Tensor y = CustomExp::apply(x);
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->name().find("CustomExp") != std::string::npos);
  check_same(y, exp(reference));
  const Tensor weights = small_tensor({3, 4}, 7);
  y.backward(weights);
  exp(reference).backward(weights);
  check_same(x.grad(), reference.grad());
  gradcheck_leaves([](const std::vector<Tensor>& in) { return CustomExp::apply(in[0]); }, {leaf({2, 3}, 2)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return CustomSin::apply(mul(in[0], 2.0)); }, {leaf({5}, 3)});
}

TEST_CASE("custom function: a linear with three inputs matches linear and finite differences") {
  const Tensor x = leaf({4, 3}, 1), weight = leaf({2, 3}, 2), bias = leaf({2}, 3);
  const Tensor x2 = x.detach().requires_grad_(), weight2 = weight.detach().requires_grad_(),
               bias2 = bias.detach().requires_grad_();
  const Tensor out = CustomLinear::apply(x, weight, bias);
  const Tensor expected = linear(x2, weight2, bias2);
  check_same(out, expected);
  const Tensor weights = small_tensor({4, 2}, 9);
  out.backward(weights);
  expected.backward(weights);
  check_same(x.grad(), x2.grad());
  check_same(weight.grad(), weight2.grad());
  check_same(bias.grad(), bias2.grad());
  CHECK(CustomLinear::needs_seen == std::vector<bool>{true, true, true});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return CustomLinear::apply(in[0], in[1], in[2]); },
            {leaf({3, 2}, 4), leaf({5, 2}, 5), leaf({5}, 6)});
}

TEST_CASE("custom function: needs_input_grad follows which inputs require grad") {
  const Tensor x = small_tensor({4, 3}, 1), weight = leaf({2, 3}, 2), bias = small_tensor({2}, 3);
  sum(CustomLinear::apply(x, weight, bias)).backward();
  CHECK(CustomLinear::needs_seen == std::vector<bool>{false, true, false});
  CHECK(weight.grad().defined());
  // The index counts tensor arguments only, as libtorch's edges.
  Misbehaving::result = [](const Tensor& grad) { return tensor_list{grad, Tensor()}; };
  struct AskTooFar : autograd::Function<AskTooFar> {
    static Tensor forward(AutogradContext* ctx, const Tensor& x, double c) {
      ctx->needs_input_grad(1);
      return mul(x, c);
    }
    static tensor_list backward(AutogradContext* /*ctx*/, tensor_list grad_outputs) { return {grad_outputs[0], {}}; }
  };
  CHECK(error_of([&] {
          AskTooFar::apply(weight, 2.0);
        }).find("needs_input_grad(1), but the function has 1 tensor inputs") != std::string::npos);
  // No input requires grad, or grad mode is off: no node at all.
  CHECK_FALSE(CustomLinear::apply(x, weight.detach(), bias).requires_grad());
  NoGradGuard no_grad;
  const Tensor out = CustomLinear::apply(x, weight, bias);
  CHECK_FALSE(out.requires_grad());
  CHECK_FALSE(out.grad_fn());
}

TEST_CASE("custom function: two outputs, materialize_grads on and off") {
  for (const bool materialize : {true, false}) {
    INFO("materialize ", materialize);
    SinCos::materialize = materialize;
    const Tensor x = leaf({4}, 1), reference = x.detach().requires_grad_();
    const tensor_list outputs = SinCos::apply(x);
    REQUIRE(outputs.size() == 2);
    check_same(outputs[0], sin(reference));
    check_same(outputs[1], cos(reference));
    CHECK(outputs[0].grad_fn() == outputs[1].grad_fn());
    // Only the second output reaches the loss: the first gets zeros, or nothing.
    sum(mul(outputs[1], 3.0)).backward();
    sum(mul(cos(reference), 3.0)).backward();
    check_same(x.grad(), reference.grad());
    REQUIRE(SinCos::received.size() == 2);
    CHECK(SinCos::received[0].defined() == materialize);
    if (materialize) check_same(SinCos::received[0], zeros({4}, {.dtype = kFloat64}));
  }
  SinCos::materialize = true;
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        const tensor_list outputs = SinCos::apply(in[0]);
        return add(outputs[0], mul(outputs[1], 3.0));
      },
      {leaf({6}, 2)});
}

TEST_CASE("custom function: non-tensor arguments and saved_data values") {
  const Tensor x = leaf({3}, 1);
  const Tensor y = ScaleBy::apply(1.5, x, int64_t{2}, std::string("scaled"));
  sum(y).backward();
  check_same(x.grad(), full({3}, 3.0, {.dtype = kFloat64}));
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) { return ScaleBy::apply(-0.5, in[0], int64_t{3}, std::string("scaled")); },
      {leaf({4}, 2)});
  // The accessors do not convert, as IValue's.
  const autograd::SavedValue count = 3;
  CHECK(count.isInt());
  CHECK(error_of([&] { count.toDouble(); }).find("toDouble() of a value holding int64") != std::string::npos);
}

namespace {

// Returns 2x and a rounded copy marked non-differentiable.
struct DoubleAndRound : autograd::Function<DoubleAndRound> {
  static inline tensor_list received;
  static tensor_list forward(AutogradContext* ctx, const Tensor& x) {
    Tensor rounded = floor(x);
    ctx->mark_non_differentiable({rounded});
    return {mul(x, 2.0), rounded};
  }
  static tensor_list backward(AutogradContext* /*ctx*/, tensor_list grad_outputs) {
    received = grad_outputs;
    return {mul(grad_outputs[0], 2.0)};
  }
};

// Multiplies its input by 3 in place (mark_dirty), or forgets to return it when `keep` is false.
struct TripleInPlace : autograd::Function<TripleInPlace> {
  static inline bool returns_input = true;
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(3.0);
    ctx->mark_dirty({x});
    return returns_input ? x : mul(x, 1.0);
  }
  static tensor_list backward(AutogradContext* /*ctx*/, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], 3.0)};
  }
};

// Returns its input as-is, with an identity gradient scaled by 5 (so its history is visible).
struct PassThrough : autograd::Function<PassThrough> {
  static Tensor forward(AutogradContext* /*ctx*/, const Tensor& x) { return x; }
  static tensor_list backward(AutogradContext* /*ctx*/, tensor_list grad_outputs) {
    return {mul(grad_outputs[0], 5.0)};
  }
};

}  // namespace

TEST_CASE("custom function: mark_non_differentiable") {
  const Tensor x = leaf({4}, 1);
  const tensor_list outputs = DoubleAndRound::apply(x);
  CHECK(outputs[0].requires_grad());
  CHECK_FALSE(outputs[1].requires_grad());
  CHECK_FALSE(outputs[1].grad_fn());
  sum(outputs[0]).backward();
  check_same(x.grad(), full({4}, 2.0, {.dtype = kFloat64}));
  // The non-differentiable output's gradient comes materialized as zeros of its shape.
  REQUIRE(DoubleAndRound::received.size() == 2);
  check_same(DoubleAndRound::received[1], zeros({4}, {.dtype = kFloat64}));
}

TEST_CASE("custom function: mark_dirty makes the node the modified input's history") {
  const Tensor leaf_x = leaf({3}, 1);
  Tensor y = mul(leaf_x, 2.0);  // a non-leaf: may be modified in place
  const Tensor out = TripleInPlace::apply(y);
  CHECK(out.impl() == y.impl());
  CHECK(y.grad_fn()->name().find("TripleInPlace") != std::string::npos);
  sum(mul(out, out)).backward();
  // d/dx sum((6x)^2) = 72x
  check_same(leaf_x.grad(), mul(leaf_x.detach(), 72.0));
  // A leaf that requires grad may not be modified in place, and a dirty input must be returned.
  const std::string leaf_error = error_of([&] { TripleInPlace::apply(leaf({3}, 2)); });
  CHECK(leaf_error.find("TripleInPlace: forward modified a leaf tensor that requires grad") != std::string::npos);
  TripleInPlace::returns_input = false;
  const std::string unreturned = error_of([&] { TripleInPlace::apply(mul(leaf({3}, 3), 1.0)); });
  TripleInPlace::returns_input = true;
  CHECK(unreturned.find("TripleInPlace: an input marked dirty (shape [3]) was not returned") != std::string::npos);
  // A view of a tensor with history: refused, ember cannot rebase its base onto the node.
  const Tensor base = mul(leaf({2, 3}, 4), 1.0);
  const std::string view_error = error_of([&] { TripleInPlace::apply(base.slice(0, 0, 1)); });
  CHECK(view_error.find("TripleInPlace: forward modified a view in place") != std::string::npos);
}

TEST_CASE("custom function: an input returned as-is comes back as an alias with the node's history") {
  const Tensor x = leaf({3}, 1);
  const Tensor out = PassThrough::apply(x);
  CHECK(out.impl() != x.impl());
  CHECK(x.is_leaf());
  CHECK(out.grad_fn());
  sum(out).backward();
  check_same(x.grad(), full({3}, 5.0, {.dtype = kFloat64}));
}

TEST_CASE("custom function: a saved tensor modified in place before backward is an error naming the function") {
  {
    const Tensor x = leaf({3}, 1);
    Tensor y = CustomExp::apply(x);  // saves its output
    Tensor loss = sum(y);
    {
      NoGradGuard no_grad;
      y.add_(ones({3}, {.dtype = kFloat64}));
    }
    const std::string message = error_of([&] { loss.backward(); });
    CHECK(message.find("modified by an in-place operation: saved tensor 0 of") != std::string::npos);
    CHECK(message.find("CustomExp") != std::string::npos);
    CHECK(message.find("is at version 1, but version 0 was saved") != std::string::npos);
  }
  Tensor x = mul(leaf({3}, 2), 1.0);
  Tensor loss = sum(CustomSin::apply(x));  // saves its input
  {
    NoGradGuard no_grad;
    x.mul_(2.0);
  }
  CHECK(error_of([&] { loss.backward(); }).find("saved tensor 0 of CustomSin (shape [3])") != std::string::npos);
}

TEST_CASE("custom function: retain_graph, and a second backward without it") {
  const Tensor x = leaf({3}, 1);
  Tensor loss = sum(CustomExp::apply(x));
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  check_same(x.grad(), mul(exp(x.detach()), 2.0));
  const std::string message = error_of([&] { loss.backward(); });
  INFO(message);
  CHECK(message.find("backward through the graph a second time (through") != std::string::npos);
  CHECK(message.find("CustomExp); its saved tensors were freed") != std::string::npos);
  // A function that saved no tensor runs again, as built-in nodes that saved nothing.
  const Tensor z = leaf({3}, 2);
  Tensor scaled = sum(ScaleBy::apply(2.0, z, int64_t{1}, std::string("scaled")));
  scaled.backward();
  scaled.backward();
  check_same(z.grad(), full({3}, 4.0, {.dtype = kFloat64}));
}

TEST_CASE("custom function: wrong backward results are errors naming the function and the values") {
  const auto backward_error = [](std::function<tensor_list(const Tensor&)> result) {
    Misbehaving::result = std::move(result);
    return error_of([] { sum(Misbehaving::apply(leaf({2, 3}, 1), 2.0)).backward(); });
  };
  CHECK(backward_error([](const Tensor& grad) {
          return tensor_list{grad};
        }).find("Misbehaving: backward returned 1 gradients, expected 2") != std::string::npos);
  CHECK(backward_error([](const Tensor& grad) {
          return tensor_list{grad, Tensor(), grad};
        }).find("Misbehaving: backward returned 3 gradients, expected 2") != std::string::npos);
  CHECK(backward_error([](const Tensor& grad) {
          return tensor_list{grad, grad};
        })
            .find("Misbehaving: backward returned a defined gradient (shape [2, 3]) for argument 1, which is not "
                  "a tensor") != std::string::npos);
  CHECK(backward_error([](const Tensor& grad) {
          return tensor_list{sum(grad, {1}), Tensor()};
        }).find("Misbehaving: backward returned a gradient of shape [2] for argument 0, a tensor of shape [2, 3]") !=
        std::string::npos);
  // As PyTorch's engine: extra undefined results are dropped, a gradient the input broadcasts to
  // is summed back to its shape, and another dtype is cast to the input's.
  for (const auto& result : std::vector<std::function<tensor_list(const Tensor&)>>{
           [](const Tensor& grad) {
             return tensor_list{grad, Tensor(), Tensor()};
           },
           [](const Tensor& grad) {
             return tensor_list{expand(mul(grad, 0.5), {2, 2, 3}), Tensor()};
           },
           [](const Tensor& grad) {
             return tensor_list{grad.to(kFloat32), Tensor()};
           }}) {
    Misbehaving::result = result;
    const Tensor x = leaf({2, 3}, 1);
    sum(Misbehaving::apply(x, 2.0)).backward();
    REQUIRE(x.grad().dtype() == kFloat64);
    check_same(x.grad(), ones({2, 3}, {.dtype = kFloat64}));
  }
}

TEST_CASE("custom function: double backward through a backward of differentiable ops") {
  // d2/dx2 of sin is -sin (the saved input's history), of exp is exp (the saved output's).
  for (const bool use_sin : {true, false}) {
    INFO("sin ", use_sin);
    const Tensor x = leaf({5}, 1), reference = x.detach().requires_grad_();
    const Tensor y = use_sin ? CustomSin::apply(x) : CustomExp::apply(x);
    const Tensor expected_y = use_sin ? sin(reference) : exp(reference);
    const Tensor first = autograd::grad({sum(mul(y, y))}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
    const Tensor expected_first =
        autograd::grad({sum(mul(expected_y, expected_y))}, {reference}, {}, std::nullopt, true)[0];
    check_same(first, expected_first);
    REQUIRE(first.requires_grad());
    const Tensor weights = small_tensor({5}, 3);
    const Tensor second = autograd::grad({sum(mul(first, weights))}, {x})[0];
    const Tensor expected_second = autograd::grad({sum(mul(expected_first, weights))}, {reference})[0];
    check_same(second, expected_second);
  }
}

namespace {

// Sums a list of tensors, with an optional offset: each list element and a present optional count
// as one argument (libtorch's counting), an absent optional as a non-tensor argument.
struct SumList : autograd::Function<SumList> {
  static Tensor forward(AutogradContext* ctx, const tensor_list& terms, const std::optional<Tensor>& offset) {
    Tensor total = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) total = add(total, terms[i]);
    ctx->saved_data["count"] = static_cast<int64_t>(terms.size());
    ctx->saved_data["offset"] = offset.has_value();
    return offset ? add(total, *offset) : total;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    tensor_list grads(static_cast<size_t>(ctx->saved_data["count"].toInt()), mul(grad_outputs[0], 1.0));
    grads.push_back(ctx->saved_data["offset"].toBool() ? mul(grad_outputs[0], 2.0) : Tensor());
    return grads;
  }
};

}  // namespace

TEST_CASE("custom function: a tensor_list argument counts one per element, an optional when present") {
  const Tensor a = leaf({3}, 1), b = leaf({3}, 2), offset = leaf({3}, 3);
  const Tensor with_offset = SumList::apply(tensor_list{a, b}, std::optional<Tensor>(offset));
  check_same(with_offset, add(add(a, b), offset).detach());
  sum(with_offset).backward();
  check_same(a.grad(), ones({3}, {.dtype = kFloat64}));
  check_same(offset.grad(), full({3}, 2.0, {.dtype = kFloat64}));
  const Tensor c = leaf({3}, 4);
  sum(SumList::apply(tensor_list{c}, std::optional<Tensor>())).backward();
  check_same(c.grad(), ones({3}, {.dtype = kFloat64}));
}

}  // namespace test_custom_function
