// Conformance cases for the deterministic factories: full, arange, linspace. They take no tensor
// inputs; each case names its dtype, and its `device` attribute becomes the device under test.
// empty and the random factories are checked in cases_random.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_factory {
namespace {

using ember::kBFloat16;
using ember::kBool;
using ember::kFloat16;
using ember::kFloat32;
using ember::kFloat64;
using ember::kInt32;
using ember::kInt64;

Tolerance tolerance_of(DType dtype) {
  switch (dtype) {
    case DType::BFloat16: return {8e-3, 1e-6};  // half an ulp at 8 mantissa bits
    case DType::Float16: return {1e-3, 1e-6};
    case DType::Float32: return {1e-6, 1e-6};
    default: return {1e-12, 1e-12};
  }
}

Case factory_case(const char* op, const std::string& label, Attrs attrs, Reference reference, DType dtype) {
  attrs.set("dtype", dtype);
  attrs.set("device", ember::kCPU);
  Case c{.op = op, .label = label + fmt::format(", {}", dtype), .attrs = attrs, .reference = std::move(reference),
         .float32 = tolerance_of(dtype)};
  return c;
}

std::vector<RefTensor> full_reference(const std::vector<RefTensor>&, const Attrs& attrs) {
  return {filled(attrs.get<Dims>("sizes"), attrs.get<double>("value"), attrs.get<DType>("dtype"))};
}

// arange: element i is start + i * step, for the ceil((end - start) / step) elements.
std::vector<RefTensor> arange_reference(const std::vector<RefTensor>&, const Attrs& attrs) {
  const double start = attrs.get<double>("start"), end = attrs.get<double>("end"), step = attrs.get<double>("step");
  const auto count = static_cast<int64_t>(std::ceil((end - start) / step));
  RefTensor out = filled({count}, 0.0, attrs.get<DType>("dtype"));
  for (int64_t i = 0; i < count; ++i) out.values[i] = start + static_cast<double>(i) * step;
  return {out};
}

// linspace: `steps` evenly spaced values from start to end inclusive.
std::vector<RefTensor> linspace_reference(const std::vector<RefTensor>&, const Attrs& attrs) {
  const double start = attrs.get<double>("start"), end = attrs.get<double>("end");
  const int64_t steps = attrs.get<int64_t>("steps");
  RefTensor out = filled({steps}, 0.0, attrs.get<DType>("dtype"));
  for (int64_t i = 0; i < steps; ++i)
    out.values[i] = steps == 1 ? start : start + (end - start) * static_cast<double>(i) / static_cast<double>(steps - 1);
  return {out};
}

std::vector<Case> factory_cases() {
  std::vector<Case> cases;
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    cases.push_back(factory_case("full", "[3,4] value 2.5", {{"sizes", Dims{3, 4}}, {"value", 2.5}}, full_reference, dtype));
    cases.push_back(factory_case("full", "0-d value -1.75", {{"sizes", Dims{}}, {"value", -1.75}}, full_reference, dtype));
    cases.push_back(factory_case("arange", "1 to 2 step 0.25",
                                 {{"start", 1.0}, {"end", 2.0}, {"step", 0.25}}, arange_reference, dtype));
    cases.push_back(factory_case("arange", "5 down to -1 step -1.5",
                                 {{"start", 5.0}, {"end", -1.0}, {"step", -1.5}}, arange_reference, dtype));
    cases.push_back(factory_case("linspace", "0 to 1, 5 steps",
                                 {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{5}}}, linspace_reference, dtype));
    cases.push_back(factory_case("linspace", "3 to -2, 7 steps",
                                 {{"start", 3.0}, {"end", -2.0}, {"steps", int64_t{7}}}, linspace_reference, dtype));
  }
  for (DType dtype : {kInt64, kInt32, kBool}) {
    cases.push_back(factory_case("full", "[2,3] value 1", {{"sizes", Dims{2, 3}}, {"value", 1.0}}, full_reference, dtype));
  }
  cases.push_back(factory_case("full", "[3,4] value 7", {{"sizes", Dims{3, 4}}, {"value", 7.0}}, full_reference, kInt64));
  cases.push_back(factory_case("full", "size-0 [0,3]", {{"sizes", Dims{0, 3}}, {"value", 3.0}}, full_reference, kFloat32));
  cases.push_back(factory_case("full", "large [131,257] (parallel path)", {{"sizes", Dims{131, 257}}, {"value", -0.5}},
                               full_reference, kFloat32));
  cases.push_back(factory_case("arange", "0 to 5", {{"start", 0.0}, {"end", 5.0}, {"step", 1.0}}, arange_reference, kInt64));
  cases.push_back(factory_case("arange", "-3 to 9 step 4", {{"start", -3.0}, {"end", 9.0}, {"step", 4.0}},
                               arange_reference, kInt32));
  cases.push_back(factory_case("arange", "empty (start == end)", {{"start", 2.0}, {"end", 2.0}, {"step", 1.0}},
                               arange_reference, kFloat32));
  cases.push_back(factory_case("arange", "0.5 to 3.2 (partial last step)", {{"start", 0.5}, {"end", 3.2}, {"step", 1.0}},
                               arange_reference, kFloat64));
  cases.push_back(factory_case("arange", "large 0 to 40000 (parallel path)", {{"start", 0.0}, {"end", 40000.0}, {"step", 1.0}},
                               arange_reference, kFloat32));
  cases.push_back(factory_case("linspace", "one step", {{"start", -1.0}, {"end", 1.0}, {"steps", int64_t{1}}},
                               linspace_reference, kFloat32));
  cases.push_back(factory_case("linspace", "zero steps", {{"start", 2.0}, {"end", -2.0}, {"steps", int64_t{0}}},
                               linspace_reference, kFloat32));
  cases.push_back(factory_case("linspace", "large 40001 steps (parallel path)",
                               {{"start", -1.0}, {"end", 10.0}, {"steps", int64_t{40001}}}, linspace_reference, kFloat64));
  return cases;
}

const CaseRegistration registration("factory", factory_cases);

TEST_CASE("conformance: full, arange and linspace match float64 references") { run_cases(factory_cases()); }

}  // namespace
}  // namespace conformance::cases_factory
