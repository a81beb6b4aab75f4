// The case runner: forward against the float64 reference on every device and dtype, then
// autograd gradients against central finite differences in float64.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <set>

#include "harness.h"

namespace conformance {

using ember::DType;
using ember::OpDef;
using ember::OpKind;

namespace {

// Central differences with eps 1e-6 in float64: truncation error ~1e-12, rounding ~1e-10.
constexpr double kFiniteDifferenceStep = 1e-6;

uint64_t case_seed(const Case& c) {
  return std::hash<std::string>{}(c.op + "/" + c.label) | 1u;
}
uint64_t input_seed(const Case& c, size_t input) { return case_seed(c) * 6364136223846793005ull + input; }

std::string describe(const Case& c, DType dtype, Device device) {
  return fmt::format("op '{}' [{}] {} on {}: ", c.op, c.label, dtype, device);
}

// The dtypes a case runs in: float32 and float64, the 16-bit floats when it gives tolerances.
// A case whose inputs are all integer, bool or pinned runs once.
std::vector<DType> dtypes_of(const Case& c) {
  const bool follows_dtype = std::any_of(c.inputs.begin(), c.inputs.end(), [](const InputSpec& spec) {
    return spec.defined && input_dtype(spec, ember::kFloat16) == ember::kFloat16;
  });
  if (!follows_dtype) return {ember::kFloat32};
  std::vector<DType> dtypes{ember::kFloat32, ember::kFloat64};
  if (c.bfloat16) dtypes.push_back(ember::kBFloat16);
  if (c.float16) dtypes.push_back(ember::kFloat16);
  return dtypes;
}

Tolerance tolerance_for(const Case& c, DType dtype) {
  switch (dtype) {
    case DType::Float64: return c.float64;
    case DType::BFloat16: return *c.bfloat16;
    case DType::Float16: return *c.float16;
    default: return c.float32;
  }
}

Attrs attrs_for(const Case& c, Device device) {
  Attrs attrs = c.attrs;
  if (attrs.has("device")) attrs.set("device", device);
  return attrs;
}

// The case's inputs in `dtype` and their logical values (drawn, or derived from earlier inputs).
std::vector<Tensor> make_inputs(const Case& c, DType dtype, Device device, std::vector<std::vector<double>>* values = nullptr) {
  std::vector<Tensor> inputs;
  std::vector<RefTensor> stored;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    const std::vector<double> drawn = spec.derive ? spec.derive(stored) : random_values(spec, input_seed(c, i));
    inputs.push_back(build_input(spec, drawn, input_dtype(spec, dtype), device));
    stored.push_back(to_reference(inputs.back()));
    if (values) values->push_back(drawn);
  }
  return inputs;
}

std::string join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : "\n") + line;
  return text;
}

bool any_nan(const RefTensor& values) {
  return std::any_of(values.values.begin(), values.values.end(), [](double v) { return std::isnan(v); });
}

// The failures of one check, each prefixed with the case, dtype and device.
class Failures {
 public:
  explicit Failures(std::string context) : context_(std::move(context)) {}
  void add(const std::string& what) { list_.push_back(context_ + what); }
  std::vector<std::string> take() { return std::move(list_); }

 private:
  std::string context_;
  std::vector<std::string> list_;
};

// Runs the op on `inputs`; an in-place op writes clones, so the leaves keep their values.
ember::TensorList run_for_gradient(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  if (op.kind != OpKind::InPlace) return run_op(op, inputs, attrs);
  std::vector<Tensor> targets = inputs;
  for (size_t i = 0; i < targets.size(); ++i)
    if ((op.mutated_inputs & (1u << i)) && targets[i].defined()) targets[i] = targets[i].clone();
  return run_op(op, targets, attrs);
}

// Compares autograd's gradient of input `i` with central differences of `loss`.
void compare_gradient(const Case& c, size_t i, const std::vector<Tensor>& inputs,
                      const std::vector<std::vector<double>>& values, Device device,
                      const std::function<double(const std::vector<Tensor>&)>& loss, Failures& failures) {
  const std::string where = fmt::format("input {} of shape {}: ", i, c.inputs[i].sizes);
  const Tensor grad = inputs[i].grad();
  std::vector<double> analytic(values[i].size(), 0.0);  // an undefined gradient means zeros
  if (grad.defined()) {
    if (grad.sizes() != inputs[i].sizes() || grad.dtype() != ember::kFloat64) {
      failures.add(where + fmt::format("gradient has shape {} and dtype {}", grad.sizes(), grad.dtype()));
      return;
    }
    analytic = to_reference(grad).values;
  }
  std::vector<Tensor> perturbed = inputs;
  int64_t mismatches = 0;
  std::string first;
  for (size_t e = 0; e < values[i].size(); ++e) {
    std::vector<double> shifted = values[i];
    shifted[e] += kFiniteDifferenceStep;
    perturbed[i] = build_input(c.inputs[i], shifted, ember::kFloat64, device);
    const double plus = loss(perturbed);
    shifted[e] -= 2 * kFiniteDifferenceStep;
    perturbed[i] = build_input(c.inputs[i], shifted, ember::kFloat64, device);
    const double minus = loss(perturbed);
    const double numeric = (plus - minus) / (2 * kFiniteDifferenceStep);
    const double allowed = c.gradient.atol + c.gradient.rtol * std::max(std::abs(numeric), std::abs(analytic[e]));
    if (!(std::abs(analytic[e] - numeric) <= allowed) && mismatches++ == 0)
      first = fmt::format("first at element {}: autograd {:.10g}, finite difference {:.10g}", e, analytic[e], numeric);
  }
  if (mismatches > 0)
    failures.add(where + fmt::format("{} of {} gradient elements differ; {}", mismatches, values[i].size(), first));
}

}  // namespace

bool differentiable_input(const OpDef& op, const Case& c, size_t i) {
  const InputSpec& spec = c.inputs[i];
  // Inputs pinned to another float dtype are not perturbed: eps 1e-6 is below float32 precision.
  return spec.defined && spec.layout != Layout::Expanded && !(op.nondifferentiable_inputs & (1u << i)) &&
         input_dtype(spec, ember::kFloat64) == ember::kFloat64;
}

bool gradient_checkable(const OpDef& op, const Case& c) {
  if (!c.gradcheck || op.backward == nullptr) return false;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (differentiable_input(op, c, i)) return true;
  return false;
}

std::vector<std::string> check_forward(const OpDef& op, const Case& c, DType dtype, Device device) {
  Failures failures(describe(c, dtype, device));
  std::vector<Tensor> inputs = make_inputs(c, dtype, device);
  std::vector<RefTensor> reference_inputs;
  std::vector<uint64_t> versions;
  for (const Tensor& input : inputs) {
    reference_inputs.push_back(to_reference(input));
    versions.push_back(input.defined() ? input.version() : 0);
  }
  const Attrs attrs = attrs_for(c, device);
  ember::TensorList outputs;
  try {
    ember::NoGradGuard no_grad;
    outputs = run_op(op, inputs, attrs);
  } catch (const std::exception& error) {
    failures.add(fmt::format("threw: {}", error.what()));
    return failures.take();
  }
  // An in-place op returns its mutated inputs, undefined where an optional one was left out.
  const uint32_t input_bits = inputs.size() >= 32 ? ~0u : (1u << inputs.size()) - 1;
  const int expected_outputs = op.kind == OpKind::InPlace ? std::popcount(op.mutated_inputs & input_bits) : op.num_outputs;
  if (outputs.size() != expected_outputs)
    failures.add(fmt::format("{} outputs, expected {}", outputs.size(), expected_outputs));
  std::vector<RefTensor> expected;
  if (c.reference) expected = c.reference(reference_inputs, attrs);
  for (int k = 0; k < outputs.size(); ++k) {
    const std::string where = fmt::format("output {}: ", k);
    const bool expect_undefined = k < static_cast<int>(expected.size()) && !expected[k].defined;
    if (outputs[k].defined() == expect_undefined) {
      failures.add(where + (expect_undefined ? "defined, expected undefined" : "undefined"));
      continue;
    }
    if (expect_undefined) continue;
    if (outputs[k].device() != device) failures.add(where + fmt::format("on {}", outputs[k].device()));
    if (k < static_cast<int>(expected.size())) {
      const std::string mismatch = compare(outputs[k], expected[k], dtype, tolerance_for(c, dtype));
      if (!mismatch.empty()) failures.add(where + mismatch);
    } else if (ember::is_floating(outputs[k].dtype()) && any_nan(to_reference(outputs[k]))) {
      // No reference for this output: every element must at least have been written.
      failures.add(where + "holds NaN: an element was left unwritten");
    }
  }
  if (op.kind == OpKind::InPlace) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if ((op.mutated_inputs & (1u << i)) && inputs[i].defined() && inputs[i].version() <= versions[i])
        failures.add(fmt::format("input {}'s version was not bumped", i));
  }
  return failures.take();
}

std::vector<std::string> check_gradients(const OpDef& op, const Case& c, Device device) {
  Failures failures(describe(c, ember::kFloat64, device) + "gradient: ");
  const Attrs attrs = attrs_for(c, device);
  std::vector<std::vector<double>> values;
  std::vector<Tensor> inputs = make_inputs(c, ember::kFloat64, device, &values);
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (differentiable_input(op, c, i)) inputs[i].requires_grad_(true);
  // Loss = sum over the chosen outputs k of <weight_k, output_k>, with random weights.
  std::vector<Tensor> roots, weights;
  std::vector<std::pair<int, RefTensor>> weight_values;
  try {
    ember::TensorList outputs = run_for_gradient(op, inputs, attrs);
    for (int k = 0; k < outputs.size(); ++k) {
      if (!(c.loss_outputs & (1u << k)) || !ember::is_floating(outputs[k].dtype())) continue;
      if (!outputs[k].requires_grad()) {
        failures.add(fmt::format("output {} has no grad_fn", k));
        return failures.take();
      }
      Tensor weight = make_input({outputs[k].sizes(), real(-1.0, 1.0)}, ember::kFloat64, device, case_seed(c) + 1000 + k);
      roots.push_back(outputs[k]);
      weights.push_back(weight);
      weight_values.emplace_back(k, to_reference(weight));
    }
    ember::backward(roots, weights);
  } catch (const std::exception& error) {
    failures.add(fmt::format("threw: {}", error.what()));
    return failures.take();
  }
  auto loss = [&](const std::vector<Tensor>& perturbed) {
    ember::NoGradGuard no_grad;
    ember::TensorList outputs = run_for_gradient(op, perturbed, attrs);
    double total = 0.0;
    for (const auto& [k, weight] : weight_values) {
      const RefTensor output = to_reference(outputs[k]);
      for (size_t e = 0; e < output.values.size(); ++e) total += weight.values[e] * output.values[e];
    }
    return total;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (differentiable_input(op, c, i)) compare_gradient(c, i, inputs, values, device, loss, failures);
  return failures.take();
}

void run_cases(const std::vector<Case>& cases) {
  const std::vector<Device> devices = test_devices();
  std::set<std::string> reported;
  for (const Case& c : cases) {
    const OpDef* op = ember::registry().find(c.op);
    if (op == nullptr) {
      if (reported.insert(c.op).second)
        MESSAGE("op '" << c.op << "' is not registered yet; its cases were not run");
      continue;
    }
    for (Device device : devices) {
      for (DType dtype : dtypes_of(c)) {
        const std::vector<std::string> failures = check_forward(*op, c, dtype, device);
        CHECK_MESSAGE(failures.empty(), join(failures));
      }
      if (gradient_checkable(*op, c)) {
        const std::vector<std::string> failures = check_gradients(*op, c, device);
        CHECK_MESSAGE(failures.empty(), join(failures));
      }
    }
  }
}

}  // namespace conformance
