// Tests of the harness itself: inputs keep their values in every layout, comparisons catch wrong
// values, and the checks catch an unwritten output element, a wrong backward rule and a lost
// second derivative. The ops used here are local OpDefs, never registered.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::harness_selftest {
namespace {

using ember::BackwardContext;
using ember::OpCall;
using ember::OpDef;
using ember::TensorList;

void same_shape(const OpCall& call, ember::OutputMetas& outputs) {
  outputs[0].sizes = call.input(0).sizes();
  outputs[0].dtype = call.input(0).dtype();
}

// out = 2 * x, optionally leaving the last element unwritten.
void write_doubled(const OpCall& call, TensorList& out, bool skip_last) {
  const RefTensor x = to_reference(call.input(0));
  const int64_t written = x.numel() - (skip_last ? 1 : 0);
  if (out[0].dtype() == ember::kFloat64) {
    for (int64_t i = 0; i < written; ++i) out[0].data_ptr<double>()[i] = 2.0 * x.values[i];
  } else {
    for (int64_t i = 0; i < written; ++i) out[0].data_ptr<float>()[i] = static_cast<float>(2.0 * x.values[i]);
  }
}
void doubled_kernel(const OpCall& call, TensorList& out) { write_doubled(call, out, false); }
void unwritten_kernel(const OpCall& call, TensorList& out) { write_doubled(call, out, true); }
void right_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = ember::mul(ctx.grad(), 2.0); }
void wrong_backward(const BackwardContext& ctx, std::span<Tensor> grads) { grads[0] = ember::mul(ctx.grad(), 3.0); }

OpDef local_op(ember::Kernel kernel, ember::BackwardRule backward) {
  OpDef op;
  op.name = "harness_selftest";
  op.infer = same_shape;
  op.kernels[static_cast<int>(ember::DeviceType::CPU)] = kernel;
  op.backward = backward;
  return op;
}

Case doubled_case(Layout layout) {
  return Case{.op = "harness_selftest", .label = "[3,4]", .inputs = {{{3, 4}, real(), layout}},
              .reference = [](const std::vector<RefTensor>& in, const Attrs&) {
                return std::vector<RefTensor>{unary(in[0], [](double x) { return 2.0 * x; })};
              }};
}

bool mentions(const std::vector<std::string>& failures, const std::string& text) {
  for (const std::string& failure : failures)
    if (failure.find(text) != std::string::npos) return true;
  return false;
}

TEST_CASE("harness: inputs hold their values in every layout, with NaN in the skipped storage") {
  const InputSpec base{{3, 4}, real()};
  const std::vector<double> values = random_values(base, 17);
  for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
    InputSpec spec = base;
    spec.layout = layout;
    const Tensor tensor = build_input(spec, values, ember::kFloat64, ember::kCPU);
    CHECK(to_reference(tensor).values == values);
    CHECK(tensor.is_contiguous() == (layout == Layout::Contiguous));
  }
  InputSpec strided = base;
  strided.layout = Layout::Strided;
  const Tensor tensor = build_input(strided, values, ember::kFloat64, ember::kCPU);
  CHECK(tensor.storage_offset() == 3);
  CHECK(std::isnan(static_cast<const double*>(tensor.impl()->storage->data())[0]));
  InputSpec expanded = base;
  expanded.layout = Layout::Expanded;
  const RefTensor rows = to_reference(build_input(expanded, values, ember::kFloat64, ember::kCPU));
  CHECK(rows.values[0] == rows.values[4]);  // the first dim has stride 0: every row is the same
  CHECK(random_values(base, 17) == values);
  CHECK(random_values(base, 18) != values);
}

TEST_CASE("harness: compare reports wrong values, NaN, dtypes and shapes") {
  const Tensor tensor = build_input({{2, 2}, real()}, {1.0, 2.0, 3.0, 4.0}, ember::kFloat32, ember::kCPU);
  const Tolerance tolerance{1e-6, 1e-6};
  CHECK(compare(tensor, {.sizes = {2, 2}, .values = {1, 2, 3, 4}}, ember::kFloat32, tolerance).empty());
  CHECK(compare(tensor, {.sizes = {2, 2}, .values = {1, 2, 3, 4.01}}, ember::kFloat32, tolerance).find("1 of 4") == 0);
  CHECK(!compare(tensor, {.sizes = {2, 2}, .values = {1, 2, 3, std::nan("")}}, ember::kFloat32, tolerance).empty());
  CHECK(compare(tensor, {.sizes = {4}, .values = {1, 2, 3, 4}}, ember::kFloat32, tolerance).find("shape") == 0);
  CHECK(compare(tensor, {.sizes = {2, 2}, .values = {1, 2, 3, 4}}, ember::kFloat64, tolerance).find("dtype") == 0);
  const Tensor poisoned = build_input({{2}, real()}, {1.0, std::nan("")}, ember::kFloat32, ember::kCPU);
  CHECK(!compare(poisoned, {.sizes = {2}, .values = {1, 5}}, ember::kFloat32, tolerance).empty());
}

TEST_CASE("harness: a correct op passes, an unwritten element and a wrong backward are caught") {
  static const OpDef right = local_op(doubled_kernel, right_backward);
  static const OpDef unwritten = local_op(unwritten_kernel, right_backward);
  static const OpDef wrong_gradient = local_op(doubled_kernel, wrong_backward);
  for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Strided}) {
    const Case c = doubled_case(layout);
    for (DType dtype : {ember::kFloat32, ember::kFloat64}) {
      CHECK(check_forward(right, c, dtype, ember::kCPU).empty());
      // Outputs are poisoned with NaN (EMBER_POISON_OUTPUTS=1) or hold stale memory.
      const std::vector<std::string> failures = check_forward(unwritten, c, dtype, ember::kCPU);
      CHECK(mentions(failures, "1 of 12 elements differ"));
    }
    CHECK(check_gradients(right, c, ember::kCPU).empty());
    CHECK(mentions(check_gradients(wrong_gradient, c, ember::kCPU), "12 of 12 gradient elements differ"));
  }
}

// out = x^2 (computed with ops). Its gradient 2 x grad is right to first order either way; the
// "constant" rule takes x as a constant (detach()), so its second derivative in x is lost, as an
// op without a backward rule of its own would lose it.
void squared_kernel(const OpCall& call, TensorList& out) {
  ember::NoGradGuard no_grad;
  out[0].copy_(ember::mul(call.input(0), call.input(0)));
}
void squared_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = ember::mul(ctx.grad(), ember::mul(ctx.input(0), 2.0));
}
void squared_constant_backward(const BackwardContext& ctx, std::span<Tensor> grads) {
  grads[0] = ember::mul(ctx.grad(), ember::mul(ctx.input(0).detach(), 2.0));
}

TEST_CASE("harness: the second-order check passes a right double backward and catches a lost one") {
  const auto squared = [](ember::BackwardRule backward) {
    OpDef op = local_op(squared_kernel, backward);
    op.save_inputs = 0b1;
    return op;
  };
  static const OpDef right = squared(squared_backward);
  static const OpDef constant = squared(squared_constant_backward);
  const Case c{.op = "harness_selftest", .label = "[3,4]", .inputs = {{{3, 4}, real()}}};
  CHECK(check_gradients(right, c, ember::kCPU).empty());
  CHECK(check_gradients(constant, c, ember::kCPU).empty());  // first order cannot tell them apart
  CHECK(check_second_gradients(right, c, ember::kCPU).empty());
  const std::vector<std::string> failures = check_second_gradients(constant, c, ember::kCPU);
  CHECK(failures.size() == 3);  // along every random direction
  CHECK(mentions(failures, "second order: along random direction 0"));
}

}  // namespace
}  // namespace conformance::harness_selftest
