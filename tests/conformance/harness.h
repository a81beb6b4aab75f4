// The conformance harness: the case table type, random inputs with chosen layouts, and the runner
// that checks an op's outputs against a float64 reference and its gradients against central
// finite differences, on every available device.
//
// A new op gets cases in the cases_*.cpp file of its family: a Case names the registry op, its
// input shapes, layouts and value domains, its attributes, a float64 reference written with plain
// loops (reference.h has broadcasting, reductions and slices along a dim) and its tolerances.
// The coverage test (coverage.cpp) fails for any registered op that no case names.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/ops/registry.h"

namespace conformance {

using ember::Attrs;
using ember::Device;
using ember::Dims;
using ember::DType;
using ember::Tensor;

// Where an input's random values come from. Inputs never hold all zeros, and values stay a margin
// away from the op's kinks (relu and abs at 0, clamp bounds) so finite differences are valid.
struct Domain {
  enum class Kind { Uniform, Integer, Index, Boolean, Distinct };
  Kind kind = Kind::Uniform;
  double low = -2.0;
  double high = 2.0;
  std::vector<double> avoid = {};  // Uniform: redraw values closer than `margin` to these points
  double margin = 0.05;
};
Domain real(double low = -2.0, double high = 2.0);
Domain positive(double low = 0.25, double high = 3.0);
Domain avoiding(std::vector<double> points, double low = -2.0, double high = 2.0);
Domain indices(int64_t low, int64_t high);  // int64 values in [low, high)
// Whole numbers in [low, high) in the floating dtype under test: comparisons see equal pairs.
Domain integers(int64_t low, int64_t high);
Domain booleans();
// Distinct multiples of 1/8 (exact in every float dtype): no ties for max, min and argmax.
Domain distinct();

// How an input is laid out in memory. Every layout but Contiguous leaves NaN in the storage
// elements it skips, so a kernel that reads the wrong element produces NaN.
enum class Layout {
  Contiguous,
  Transposed,  // column-major: the first dim has stride 1
  Strided,     // every dim's stride doubled, storage offset 3
  Expanded,    // the first dim of size > 1 has stride 0 (forward only: elements alias)
};

struct RefTensor;

struct InputSpec {
  Dims sizes = {};
  Domain domain = real();
  Layout layout = Layout::Contiguous;
  bool defined = true;             // false: an undefined Tensor (an optional input left out)
  std::optional<DType> dtype = {};  // pinned dtype; default: the floating dtype under test
  // A float32 statistic of 16-bit data (layer_norm's mean and rstd): float32 when the dtype under
  // test is bf16 or fp16, that dtype otherwise.
  bool statistic = false;
  // Values computed from the earlier inputs (as stored) instead of drawn: a result that must
  // match its input, like the reduced maximum extremum_backward takes.
  std::function<std::vector<double>(const std::vector<RefTensor>& earlier)> derive = {};
};
InputSpec undefined_input();

// A float64 host copy of a tensor: what references read and return.
struct RefTensor {
  bool defined = true;  // false: the op received an undefined (optional) input
  Dims sizes = {};
  std::vector<double> values = {};  // row-major
  std::optional<DType> dtype = {};  // expected dtype of an op output; unset: the floating dtype tested
  int64_t numel() const { return sizes.product(); }
};

// A float64 reference: plain loops over the inputs' values, never ember ops.
using Reference = std::function<std::vector<RefTensor>(const std::vector<RefTensor>& inputs,
                                                       const Attrs& attrs)>;

struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

struct Case {
  std::string op;     // registry name
  std::string label;  // what the case exercises: "broadcast [3,1] with [4]"
  std::vector<InputSpec> inputs = {};
  Attrs attrs = {};  // an attribute named "device" is replaced by the device under test
  // Empty: the op's forward values are checked by a specific test (random ops); the case then
  // checks gradients, shapes and that every output element was written.
  Reference reference = {};
  Tolerance float32{1e-5, 1e-6};
  Tolerance float64{1e-10, 1e-12};
  std::optional<Tolerance> bfloat16 = {};  // set when the op supports 16-bit floats
  std::optional<Tolerance> float16 = {};
  bool gradcheck = true;   // compare gradients with finite differences if the op has a backward
  Tolerance gradient{1e-5, 1e-7};
  uint32_t loss_outputs = ~0u;  // outputs that enter the random linear combination for gradients
  // Set for decompositions, whose outputs are unique only up to signs (QR, eigh, SVD): the op's
  // outputs (as float64) are mapped to sign-free quantities (Q R, Q^T Q, ...) and those are
  // compared with what `reference` returns, which are then the expected quantities themselves.
  std::function<std::vector<RefTensor>(const std::vector<RefTensor>& outputs)> compared_as = {};
  // Maps the inputs, with autograd, before the op in the gradient checks only (PyTorch's gradcheck
  // wrappers): eigh reads one triangle, so its gradient holds along symmetric perturbations and is
  // checked on A + A^T.
  std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)> gradient_inputs = {};
};

// Both 16-bit tolerances: bfloat16 keeps 8 mantissa bits, float16 11, so fp16 is 4x tighter.
Case& with_half(Case& c, double bfloat16_tolerance = 1.6e-2);

// A family of cases (one cases_*.cpp file); registered at load time so the coverage test sees
// every op any family names.
struct CaseFamily {
  const char* name;
  std::vector<Case> (*make)();
};
std::vector<CaseFamily>& case_families();
struct CaseRegistration {
  CaseRegistration(const char* name, std::vector<Case> (*make)()) {
    case_families().push_back({name, make});
  }
};

// The devices the suite runs on: the CPU, plus CUDA when it is usable. When it is not, a line
// says CUDA cases were skipped (they are never counted as passed).
std::vector<Device> test_devices();
// False for ops left out by EMBER_CONFORMANCE_OPS (a comma-separated list; unset: every op).
bool op_selected(const std::string& op);

// Runs every case (forward on each device and dtype, first and second derivatives in float64,
// thread-count invariance on the CPU) with doctest checks; ops not registered yet are reported
// and skipped here (the coverage test fails for them).
void run_cases(const std::vector<Case>& cases);

// The checks run_cases makes, each returning what went wrong (empty: passed).
std::vector<std::string> check_forward(const ember::OpDef& op, const Case& c, DType dtype, Device device);
std::vector<std::string> check_gradients(const ember::OpDef& op, const Case& c, Device device);
// The second-order check (harness_second_order.cpp): autograd's derivatives of the op's gradient
// (create_graph) in its inputs and in its grad input, against central differences of the gradient.
std::vector<std::string> check_second_gradients(const ember::OpDef& op, const Case& c, Device device);
// Whether input i of the case is perturbed and compared (floating float64, not Expanded, not
// marked nondifferentiable by the op), and whether the case checks gradients at all.
bool differentiable_input(const ember::OpDef& op, const Case& c, size_t i);
bool gradient_checkable(const ember::OpDef& op, const Case& c);
// On the CPU, a case large enough for the parallel paths gives bit-identical float32 results on
// one thread and on three.
std::vector<std::string> check_thread_invariance(const ember::OpDef& op, const Case& c);

// ---- building blocks, also used by the specific tests ----
// The dtype an input of `spec` gets when the case runs in the floating dtype `tested`.
DType input_dtype(const InputSpec& spec, DType tested);
// `spec`'s random logical values (row-major), a pure function of `seed`.
std::vector<double> random_values(const InputSpec& spec, uint64_t seed);
// A tensor of `spec`'s shape and layout holding `values` (row-major), in `dtype` on `device`.
Tensor build_input(const InputSpec& spec, const std::vector<double>& values, DType dtype, Device device);
Tensor make_input(const InputSpec& spec, DType dtype, Device device, uint64_t seed);
// Any tensor's values (any device, dtype, strides) as float64, row-major.
RefTensor to_reference(const Tensor& tensor);
// Compares `actual` with `expected`; returns "" or a message naming the first mismatch.
std::string compare(const Tensor& actual, const RefTensor& expected, DType tested, Tolerance tolerance);
// Runs an op call through ember::dispatch.
ember::TensorList run_op(const ember::OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

}  // namespace conformance
