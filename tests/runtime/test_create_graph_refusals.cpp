// What a create_graph backward refuses (refuse_constant_use: an op without a backward rule that a
// backward rule calls on a tensor that requires grad) and what it must leave alone: a refused
// in-place op writes nothing, and a tensor's hooks, user code rather than a backward rule, are
// held to it neither on a leaf nor on a non-leaf.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/ops/registry.h"

namespace test_create_graph_refusals {

using namespace ember;
using ember::testing::error_of;

namespace {

std::vector<double> values(const Tensor& tensor) {
  REQUIRE(tensor.defined());
  return tensor.to_vector<double>();
}

// tally_(total, amount): total += amount, in place, with no backward rule (a statistic a backward
// rule keeps on the side).
void tally_kernel(const OpCall& call, TensorList& outputs) {
  NoGradGuard no_grad;
  outputs[0].add_(call.input(1));
}
OpDef make_tally_op() {
  OpDef op;
  op.name = "test_tally_";
  op.kind = OpKind::InPlace;
  op.mutated_inputs = 0b1;
  op.kernels[static_cast<int>(DeviceType::CPU)] = tally_kernel;
  return op;
}
const OpDef tally_op = make_tally_op();

// The running total test_half_square's backward rule adds each gradient it computes to.
Tensor& gradient_tally() {
  static Tensor total = zeros({2}, {.dtype = kFloat64});
  return total;
}

// half_square(x) = x^2 / 2, whose backward rule, grad * x, also tallies what it returns.
void half_square_shape(const OpCall& call, OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.input(0).dtype();
}
void half_square_kernel(const OpCall& call, TensorList& outputs) {
  NoGradGuard no_grad;
  outputs[0].copy_(mul(mul(call.input(0), call.input(0)), 0.5));
}
void half_square_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = mul(ctx.grad(), ctx.input(0));
  dispatch(OpCall{tally_op, std::vector<Tensor>{gradient_tally(), grads[0]}, {}});
}
OpDef make_half_square_op() {
  OpDef op;
  op.name = "test_half_square";
  op.infer = half_square_shape;
  op.kernels[static_cast<int>(DeviceType::CPU)] = half_square_kernel;
  op.backward = half_square_backward;
  op.save_inputs = 0b1;
  return op;
}
const OpDef half_square_op = make_half_square_op();

}  // namespace

TEST_CASE("create_graph: an in-place op without a backward rule is refused before it writes") {
  Tensor& tally = gradient_tally();
  const Tensor x = from_vector(std::vector<double>{1.0, 2.0}).requires_grad_();
  const Tensor y = dispatch_one(half_square_op, {x}).sum();
  // A plain backward runs the rule: the gradient x, tallied.
  CHECK(values(autograd::grad({y}, {x}, {}, /*retain_graph=*/true)[0]) == std::vector<double>{1.0, 2.0});
  CHECK(values(tally) == std::vector<double>{1.0, 2.0});
  const uint64_t version = tally.version();
  const std::string message = error_of([&] { autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true); });
  CHECK(message.find("test_half_square's backward is not differentiable (create_graph=true): it calls test_tally_, "
                     "which has no backward rule") != std::string::npos);
  // The refused call wrote nothing.
  CHECK(values(tally) == std::vector<double>{1.0, 2.0});
  CHECK(tally.version() == version);
}

TEST_CASE("create_graph: a leaf's hooks are not a backward rule, as a non-leaf's are not") {
  const Tensor tally = zeros({2}, {.dtype = kFloat64});
  const auto tallying_hook = [&](const Tensor& grad) {
    dispatch(OpCall{tally_op, std::vector<Tensor>{tally, grad}, {}});
    return Tensor();
  };
  Tensor x = from_vector(std::vector<double>{1.0, 2.0}).requires_grad_();
  x.register_hook(tallying_hook);
  Tensor y = mul(x, 3.0);
  y.register_hook(tallying_hook);
  mul(y, x).sum().backward({}, std::nullopt, /*create_graph=*/true);  // sum(3 x^2)
  // The non-leaf y's hook saw x = [1, 2], the leaf's hook the whole gradient 6x.
  CHECK(values(tally) == std::vector<double>{7.0, 14.0});
  CHECK(values(x.grad()) == std::vector<double>{6.0, 12.0});
  REQUIRE(x.grad().requires_grad());
  CHECK(values(autograd::grad({x.grad().sum()}, {x})[0]) == std::vector<double>{6.0, 6.0});
  x.set_grad(Tensor());  // a .grad with history holds x: the cycle docs/ARCHITECTURE.md names
}

}  // namespace test_create_graph_refusals
