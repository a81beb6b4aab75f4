// The registry ops of hardtanh, hardswish, hardsigmoid, mish and log_sigmoid
// (runtime/ops/activation_more_ops.cpp): F:: dispatches one op forward and one backward op, 16-bit
// inputs are computed in float32 and rounded once (gradients too), the backward ops' own rules give
// the second derivatives, and the ops refuse what PyTorch's refuse. Values at the kinks, infinities
// and NaN against float64 references are in test_activations_more.cpp; every layout and dtype, CUDA
// included, in the conformance suite (cases_unary.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "host_read_recorder.h"
#include "runtime/ember.h"

namespace test_activation_ops {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

using Unary = std::function<Tensor(const Tensor&)>;

struct ActivationCase {
  const char* name;      // the forward op
  const char* backward;  // its backward op
  Unary function;
};

const std::vector<ActivationCase>& activations() {
  static const std::vector<ActivationCase> all = {
      {"hardtanh", "hardtanh_backward", [](const Tensor& x) { return F::hardtanh(x, -1.5, 2.0); }},
      {"hardtanh", "hardtanh_backward", [](const Tensor& x) { return F::relu6(x); }},
      {"hardswish", "hardswish_backward", [](const Tensor& x) { return F::hardswish(x); }},
      {"hardsigmoid", "hardsigmoid_backward", [](const Tensor& x) { return F::hardsigmoid(x); }},
      {"mish", "mish_backward", [](const Tensor& x) { return F::mish(x); }},
      {"log_sigmoid", "log_sigmoid_backward", [](const Tensor& x) { return F::logsigmoid(x); }},
  };
  return all;
}

// Values over every side of each function: [-8, 8] in steps of 1/16 (exact in bf16 and fp16).
Tensor spread(DType dtype) { return sub(mul(arange(0.0, 257.0), 1.0 / 16.0), 8.0).to(dtype); }

// Same dtype, shape and bytes (both contiguous here).
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().raw_data_ptr(), b.contiguous().raw_data_ptr(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("each activation dispatches its one op forward and its one backward op, nothing else") {
  for (const ActivationCase& activation : activations()) {
    INFO(std::string(activation.name));
    const Tensor x = spread(kFloat32).requires_grad_();
    OpNameRecorder recorder;
    Tensor y;
    {
      DispatchModeGuard guard(recorder);
      y = activation.function(x);
    }
    CHECK(recorder.names == std::vector<std::string>{activation.name});
    const Tensor grad = ones_like(y);
    {
      DispatchModeGuard guard(recorder);
      y.backward(grad);
    }
    CHECK(std::count(recorder.names.begin(), recorder.names.end(), std::string(activation.backward)) == 1);
    for (const char* composite_step : {"where", "clamp", "mul", "exp", "log1p", "tanh", "softplus"}) {
      INFO(std::string(composite_step));
      CHECK(std::count(recorder.names.begin(), recorder.names.end(), std::string(composite_step)) == 0);
    }
  }
}

TEST_CASE("bf16 and fp16 inputs are computed in float32 and rounded once, forward and backward") {
  for (const ActivationCase& activation : activations()) {
    for (DType dtype : {kBFloat16, kFloat16}) {
      INFO(std::string(activation.name), " in ", dtype);
      const Tensor x = spread(dtype).requires_grad_();
      const Tensor x32 = x.detach().to(kFloat32).requires_grad_();
      const Tensor y = activation.function(x), y32 = activation.function(x32);
      CHECK(same_bits(y, y32.to(dtype)));
      // A gradient that is not 1, so the multiply by grad is checked too.
      const Tensor grad = mul(cos(x.detach().to(kFloat32)), 3.0).to(dtype);
      y.backward(grad);
      y32.backward(grad.to(kFloat32));
      CHECK(same_bits(x.grad(), x32.grad().to(dtype)));
    }
  }
}

TEST_CASE("second derivatives: hardswish's 1/3 inside (-3, 3), mish's and logsigmoid's by central differences") {
  // d/dx of hardswish' at -4, -2, 0, 2.5, 4 (off the kinks): 0, 1/3, 1/3, 1/3, 0.
  const Tensor x = doubles({-4.0, -2.0, 0.0, 2.5, 4.0}).requires_grad_();
  const Tensor first = autograd::grad({sum(F::hardswish(x))}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  const std::vector<double> second = values_of(autograd::grad({sum(first)}, {x})[0]);
  const std::vector<double> expected = {0.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0};
  for (size_t i = 0; i < expected.size(); ++i) CHECK(second[i] == doctest::Approx(expected[i]).epsilon(1e-15));
  // The backward ops' rules against central differences of the backward ops themselves, in both
  // inputs (grad and the saved input), on values that stay off the kinks.
  for (const char* name : {"hardswish_backward", "mish_backward", "log_sigmoid_backward"}) {
    INFO(std::string(name));
    const OpDef& op = lookup_op(name);
    gradcheck_leaves([&](const std::vector<Tensor>& inputs) { return dispatch_one(op, {inputs[0], inputs[1]}); },
              {leaf({3, 5}, 31), leaf({3, 5}, 32)});
  }
}

TEST_CASE("hardtanh's and hardsigmoid's backward ops take no gradient in their saved input") {
  // Piecewise linear: f'' is 0 away from the kinks, so the saved input is a mask, as in PyTorch.
  CHECK(lookup_op("hardtanh_backward").nondifferentiable_inputs == 0b10);
  CHECK(lookup_op("hardsigmoid_backward").nondifferentiable_inputs == 0b10);
  const Tensor x = doubles({-2.0, 0.5, 0.75, 1.0}).requires_grad_();
  const Tensor first = autograd::grad({sum(mul(F::hardtanh(x), x))}, {x}, {}, std::nullopt, true)[0];
  // d/dx (x hardtanh(x)) = hardtanh(x) + x hardtanh'(x); its derivative is 2 hardtanh'(x) (0 at the bound 1).
  CHECK(values_of(autograd::grad({sum(first)}, {x})[0]) == std::vector<double>{0.0, 2.0, 2.0, 0.0});
}

TEST_CASE("the ops refuse integer tensors by name and F:: names the caller line") {
  for (const std::string name : {"hardtanh", "hardswish", "hardsigmoid", "mish", "log_sigmoid"}) {
    INFO(name);
    const Attrs attrs = name == "hardtanh" ? Attrs{{"min_val", -1.0}, {"max_val", 1.0}} : Attrs{};
    const std::string message =
        error_of([&] { dispatch_one(lookup_op(name.c_str()), {arange(0.0, 4.0).to(kInt32)}, attrs); });
    CHECK(message.find(name + ": expected a floating-point tensor, got int32") != std::string::npos);
  }
  const std::vector<std::pair<std::string, std::function<void(Where)>>> refusals = {
      {"hardswish", [](Where where) { F::hardswish(arange(0.0, 3.0).to(kInt64), where); }},
      {"hardsigmoid", [](Where where) { F::hardsigmoid(arange(0.0, 3.0).to(kBool), where); }},
      {"mish", [](Where where) { F::mish(arange(0.0, 3.0).to(kInt32), where); }},
      {"logsigmoid", [](Where where) { F::logsigmoid(arange(0.0, 3.0).to(kInt64), where); }},
      {"hardtanh", [](Where where) { F::hardtanh(arange(0.0, 3.0).to(kBool), -1.0, 1.0, where); }},
  };
  for (const auto& [name, refuse] : refusals) {
    INFO(name);
    const int line = __LINE__ + 1;
    const std::string message = error_of([&] { refuse(Where::current()); });
    CHECK(message.find(name + ": ") != std::string::npos);
    CHECK(names_line(message, line));
  }
  // F::hardtanh clamps integers itself, with the bounds truncated, as PyTorch's.
  CHECK(values_of(F::hardtanh(arange(-3.0, 4.0).to(kInt64), -1.5, 2.5)) ==
        std::vector<double>{-1.0, -1.0, -1.0, 0.0, 1.0, 2.0, 2.0});
}

}  // namespace test_activation_ops
