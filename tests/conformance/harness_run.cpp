// The case runner and the forward check: every case on every device and dtype against its
// float64 reference, plus the helpers the gradient and thread checks share (harness_detail.h).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <set>

#include "harness_detail.h"

namespace conformance {

using ember::OpDef;
using ember::OpKind;

namespace detail {

namespace {

// Each input of a case draws from its own stream; every dtype and device sees the same values.
uint64_t input_seed(const Case& c, size_t input) { return case_seed(c) * 6364136223846793005ull + input; }

}  // namespace

uint64_t case_seed(const Case& c) {
  return std::hash<std::string>{}(c.op + "/" + c.label) | 1u;
}

std::string describe(const Case& c, DType dtype, Device device) {
  return fmt::format("op '{}' [{}] {} on {}: ", c.op, c.label, dtype, device);
}

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

std::vector<Tensor> make_inputs(const Case& c, DType dtype, Device device, std::vector<std::vector<double>>* values) {
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

}  // namespace detail

using namespace detail;

namespace {

bool any_nan(const RefTensor& values) {
  return std::any_of(values.values.begin(), values.values.end(), [](double v) { return std::isnan(v); });
}

}  // namespace

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
  if (c.compared_as) {
    std::vector<RefTensor> actual;
    for (const Tensor& output : outputs) actual.push_back(to_reference(output));
    const std::vector<RefTensor> quantities = c.compared_as(actual);
    if (quantities.size() != expected.size())
      failures.add(
          fmt::format("{} sign-free quantities, but the reference gives {}", quantities.size(), expected.size()));
    for (size_t q = 0; q < quantities.size() && q < expected.size(); ++q) {
      // Rounded to the dtype under test, as an output would be, then compared like one.
      const Tensor quantity = build_input({quantities[q].sizes}, quantities[q].values, dtype, ember::kCPU);
      const std::string mismatch = compare(quantity, expected[q], dtype, tolerance_for(c, dtype));
      if (!mismatch.empty()) failures.add(fmt::format("sign-free quantity {}: ", q) + mismatch);
    }
    expected.clear();  // the outputs themselves are only checked for being written
  }
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

namespace {

// A check that threw (e.g. building an input on a device whose copy kernel failed) becomes that
// case's failure, so one broken kernel does not hide the remaining cases of its family.
template <typename Check>
std::vector<std::string> guarded(const Case& c, DType dtype, Device device, Check check) {
  try {
    return check();
  } catch (const std::exception& error) {
    return {describe(c, dtype, device) + "threw: " + error.what()};
  }
}

}  // namespace

void run_cases(const std::vector<Case>& cases) {
  const std::vector<Device> devices = test_devices();
  std::set<std::string> reported;
  const bool on_cpu = std::find(devices.begin(), devices.end(), ember::kCPU) != devices.end();
  for (const Case& c : cases) {
    if (!op_selected(c.op)) continue;
    const OpDef* op = ember::registry().find(c.op);
    if (op == nullptr) {
      if (reported.insert(c.op).second)
        MESSAGE("op '" << c.op << "' is not registered yet; its cases were not run");
      continue;
    }
    for (Device device : devices) {
      for (DType dtype : dtypes_of(c)) {
        const std::vector<std::string> failures =
            guarded(c, dtype, device, [&] { return check_forward(*op, c, dtype, device); });
        CHECK_MESSAGE(failures.empty(), join(failures));
      }
      if (gradient_checkable(*op, c)) {
        const std::vector<std::string> failures =
            guarded(c, ember::kFloat64, device, [&] { return check_gradients(*op, c, device); });
        CHECK_MESSAGE(failures.empty(), join(failures));
        const std::vector<std::string> second_order_failures =
            guarded(c, ember::kFloat64, device, [&] { return check_second_gradients(*op, c, device); });
        CHECK_MESSAGE(second_order_failures.empty(), join(second_order_failures));
      }
    }
    if (!on_cpu) continue;
    const std::vector<std::string> failures = check_thread_invariance(*op, c);
    CHECK_MESSAGE(failures.empty(), join(failures));
  }
}

}  // namespace conformance
