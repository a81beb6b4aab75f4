// Conformance cases for copies and conversions (clone, to_dtype, to_device) and the in-place ops
// (add_, mul_, mul_scalar_, copy_, fill_). In-place cases check the written input 0; their
// gradients are taken through a clone, since a leaf that requires grad cannot be written.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_copy {
namespace {

using enum Layout;
using ember::kBool;
using ember::kFloat32;
using ember::kFloat64;
using ember::kInt64;

std::vector<RefTensor> identity(const std::vector<RefTensor>& in, const Attrs&) { return {in[0]}; }

// Conversion to `dtype` as C++ does it: integers truncate toward zero, bool is "not zero".
std::vector<RefTensor> to_dtype_reference(const std::vector<RefTensor>& in, const Attrs& attrs) {
  const DType dtype = attrs.get<DType>("dtype");
  return {unary(in[0], [dtype](double x) {
    if (dtype == kBool) return x != 0.0 ? 1.0 : 0.0;
    if (ember::is_integral(dtype)) return std::trunc(x);
    return x;
  }, dtype)};
}

Case simple_case(const char* op, const std::string& label, std::vector<InputSpec> inputs, Attrs attrs,
                 Reference reference, Tolerance tolerance = {0, 0}) {
  Case c{.op = op, .label = label, .inputs = std::move(inputs), .attrs = attrs, .reference = std::move(reference),
         .float32 = tolerance, .float64 = tolerance};
  return with_half(c, 1e-2);
}

std::vector<Case> copy_cases() {
  const Domain d = real();
  std::vector<Case> cases;
  for (const Variant& variant : unary_variants(d)) {
    Case clone = simple_case("clone", variant.label, variant.inputs, {}, identity);
    clone.gradcheck = variant.gradcheck;
    cases.push_back(with_half(clone, 0.0));
    Case to_device = simple_case("to_device", variant.label, variant.inputs,
                                 {{"device", ember::kCPU}, {"non_blocking", false}}, identity);
    to_device.gradcheck = variant.gradcheck;
    cases.push_back(with_half(to_device, 0.0));
  }

  // to_dtype: every floating dtype to float64 (exact) and float32 (rounded), floats to int64 and
  // bool, and int64 / bool back to floats.
  const Domain fractional = avoiding({-1, 0, 1}, -5.0, 5.0);  // truncation stays clear of integers
  for (const Variant& variant : unary_variants(fractional)) {
    Case to64 = simple_case("to_dtype", std::string(variant.label) + " to float64", variant.inputs, {{"dtype", kFloat64}},
                            to_dtype_reference);
    to64.gradcheck = variant.gradcheck;
    cases.push_back(with_half(to64, 0.0));
    Case to32 = simple_case("to_dtype", std::string(variant.label) + " to float32", variant.inputs, {{"dtype", kFloat32}},
                            to_dtype_reference, {1e-7, 1e-7});
    to32.gradcheck = false;  // finite differences of a float32 result are below its precision
    cases.push_back(with_half(to32, 0.0));
  }
  cases.push_back(simple_case("to_dtype", "[3,4] to int64 (truncates)", {{{3, 4}, fractional}}, {{"dtype", kInt64}},
                              to_dtype_reference));
  cases.push_back(simple_case("to_dtype", "transposed [3,4] to bool", {{{3, 4}, integers(-1, 2), Transposed}},
                              {{"dtype", kBool}}, to_dtype_reference));
  cases.push_back(simple_case("to_dtype", "int64 [3,4] to float32", {{{3, 4}, indices(-50, 50)}},
                              {{"dtype", kFloat32}}, to_dtype_reference));
  cases.push_back(simple_case("to_dtype", "bool [3,4] to float64", {{{3, 4}, booleans()}}, {{"dtype", kFloat64}},
                              to_dtype_reference));

  // ---- in place ----
  struct Target {
    const char* label;
    InputSpec target;
    InputSpec other;
  };
  const std::vector<Target> targets = {
      {"[3,4] with [3,4]", {{3, 4}, d}, {{3, 4}, d}},
      {"[3,4] with broadcast [4]", {{3, 4}, d}, {{4}, d}},
      {"transposed [4,5] with strided [4,5]", {{4, 5}, d, Transposed}, {{4, 5}, d, Strided}},
      {"strided [2,3,4] with 0-d", {{2, 3, 4}, d, Strided}, {{}, d}},
      {"[3,4] with expanded [3,4]", {{3, 4}, d}, {{3, 4}, d, Expanded}},
      {"size-0 [0,3] with [3]", {{0, 3}, d}, {{3}, d}},
      {"0-d with 0-d", {{}, d}, {{}, d}},
      {"large [131,257] with [257] (parallel path)", {{131, 257}, d}, {{257}, d}},
  };
  for (const Target& target : targets) {
    const bool small = target.target.sizes.product() < 1000;
    for (double alpha : {1.0, -1.5}) {
      Case add = simple_case("add_", target.label + fmt::format(", alpha {}", alpha), {target.target, target.other},
                             {{"alpha", alpha}}, [](const std::vector<RefTensor>& in, const Attrs& attrs) {
                               const double a = attrs.get<double>("alpha");
                               return std::vector<RefTensor>{binary(in[0], in[1], [a](double x, double y) { return x + a * y; })};
                             }, {1e-6, 1e-6});
      add.gradcheck = small;
      cases.push_back(add);
    }
    Case mul = simple_case("mul_", target.label, {target.target, target.other}, {},
                           [](const std::vector<RefTensor>& in, const Attrs&) {
                             return std::vector<RefTensor>{binary(in[0], in[1], std::multiplies<double>())};
                           }, {1e-6, 1e-6});
    mul.gradcheck = small;
    cases.push_back(mul);
    Case copy = simple_case("copy_", target.label, {target.target, target.other}, {},
                            [](const std::vector<RefTensor>& in, const Attrs&) {
                              return std::vector<RefTensor>{binary(in[0], in[1], [](double, double y) { return y; })};
                            });
    copy.gradcheck = small;
    cases.push_back(with_half(copy, 1e-2));
    Case scale = simple_case("mul_scalar_", std::string(target.label) + ", value -2.5", {target.target}, {{"value", -2.5}},
                             [](const std::vector<RefTensor>& in, const Attrs&) {
                               return std::vector<RefTensor>{unary(in[0], [](double x) { return -2.5 * x; })};
                             }, {1e-6, 1e-6});
    scale.gradcheck = small;
    cases.push_back(scale);
    Case fill = simple_case("fill_", std::string(target.label) + ", value 0.75", {target.target}, {{"value", 0.75}},
                            [](const std::vector<RefTensor>& in, const Attrs&) {
                              return std::vector<RefTensor>{filled(in[0].sizes, 0.75)};
                            });
    fill.gradcheck = small;
    cases.push_back(fill);
    Case zero = simple_case("zero_", target.label, {target.target}, {},
                            [](const std::vector<RefTensor>& in, const Attrs&) {
                              return std::vector<RefTensor>{filled(in[0].sizes, 0.0)};
                            });
    zero.gradcheck = small;
    cases.push_back(zero);
  }
  // add_ and mul_ compute in result_type, wider than a 16-bit target: these float32 operands lie
  // beyond float16's range (65504) while the results do not, so a kernel that rounds the operand
  // to the target's dtype first gives inf in the float16 run. Gradients: the cases above.
  const InputSpec beyond_half_negative{{4}, real(-7.2e4, -7.0e4), Contiguous, true, kFloat32};
  Case wide_add = simple_case("add_", "transposed [3,4] with float32 [4] beyond float16's range",
                              {{{3, 4}, real(5.9e4, 6.0e4), Transposed}, beyond_half_negative}, {{"alpha", 1.0}},
                              [](const std::vector<RefTensor>& in, const Attrs&) {
                                return std::vector<RefTensor>{binary(in[0], in[1], std::plus<double>())};
                              }, {1e-6, 1e-6});
  wide_add.gradcheck = false;
  cases.push_back(wide_add);
  const InputSpec beyond_half{{3, 1}, real(7.0e4, 1.0e5), Contiguous, true, kFloat32};
  Case wide_mul = simple_case("mul_", "[3,4] with float32 [3,1] beyond float16's range",
                              {{{3, 4}, real(5e-4, 1e-3)}, beyond_half}, {},
                              [](const std::vector<RefTensor>& in, const Attrs&) {
                                return std::vector<RefTensor>{binary(in[0], in[1], std::multiplies<double>())};
                              }, {1e-6, 1e-6});
  wide_mul.gradcheck = false;
  cases.push_back(wide_mul);
  // One value written everywhere ends the same in any order: an expanded target is accepted.
  const InputSpec expanded{{3, 4}, d, Expanded};
  cases.push_back(simple_case("fill_", "expanded [3,4], value -1.25", {expanded}, {{"value", -1.25}},
                              [](const std::vector<RefTensor>& in, const Attrs&) {
                                return std::vector<RefTensor>{filled(in[0].sizes, -1.25)};
                              }));
  cases.push_back(simple_case("zero_", "expanded [3,4]", {expanded}, {},
                              [](const std::vector<RefTensor>& in, const Attrs&) {
                                return std::vector<RefTensor>{filled(in[0].sizes, 0.0)};
                              }));
  // copy_ converts: a float64 source into the destination's dtype, an int64 source into floats.
  cases.push_back(simple_case("copy_", "float64 source [4] into [3,4]",
                              {{{3, 4}, d}, {{4}, d, Contiguous, true, kFloat64}}, {},
                              [](const std::vector<RefTensor>& in, const Attrs&) {
                                return std::vector<RefTensor>{binary(in[0], in[1], [](double, double y) { return y; })};
                              }, {1e-7, 0}));
  cases.push_back(simple_case("copy_", "int64 source [3,4] into [3,4]", {{{3, 4}, d}, {{3, 4}, indices(-9, 9)}}, {},
                              [](const std::vector<RefTensor>& in, const Attrs&) {
                                return std::vector<RefTensor>{binary(in[0], in[1], [](double, double y) { return y; })};
                              }));
  return cases;
}

const CaseRegistration registration("copy", copy_cases);

TEST_CASE("conformance: copies, conversions and in-place ops match references and finite differences") {
  run_cases(copy_cases());
}

}  // namespace
}  // namespace conformance::cases_copy
