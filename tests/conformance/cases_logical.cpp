// Conformance cases for the value tests (isnan, isinf, isfinite), the logical ops (logical_not,
// logical_and, logical_or, logical_xor) and the reductions any and all: bool results from inputs
// holding NaN, +-inf, -0.0 and zeros, in every floating dtype and in int64 and bool.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "reference.h"

namespace conformance::cases_logical {
namespace {

using ember::kBool;
using ember::kInt64;

// NaN, both infinities, both zeros and ordinary values, repeated over the shape: every element
// pattern the value tests distinguish, exact in every floating dtype.
InputSpec special_values(Dims sizes, Layout layout = Layout::Contiguous) {
  InputSpec spec{sizes, real(), layout};
  spec.derive = [sizes](const std::vector<RefTensor>&) {
    constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    constexpr double kInf = std::numeric_limits<double>::infinity();
    constexpr double kPattern[] = {1.25, kNaN, kInf, -kInf, -0.0, 0.0, -3.5};
    std::vector<double> values(static_cast<size_t>(sizes.product()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = kPattern[i % std::size(kPattern)];
    return values;
  };
  return spec;
}

double as_bit(bool value) { return value ? 1.0 : 0.0; }

struct Predicate {
  const char* op;
  bool (*math)(double);
};
const Predicate kPredicates[] = {
    {"isnan", [](double x) { return std::isnan(x); }},
    {"isinf", [](double x) { return std::isinf(x); }},
    {"isfinite", [](double x) { return std::isfinite(x); }},
    {"logical_not", [](double x) { return x == 0.0; }},
};

struct Logical {
  const char* op;
  bool (*math)(bool, bool);
};
const Logical kLogicals[] = {
    {"logical_and", [](bool a, bool b) { return a && b; }},
    {"logical_or", [](bool a, bool b) { return a || b; }},
    {"logical_xor", [](bool a, bool b) { return a != b; }},
};

Case bool_case(const char* op, const std::string& label, std::vector<InputSpec> inputs, Reference reference) {
  Case c{.op = op, .label = label, .inputs = std::move(inputs), .reference = std::move(reference)};
  return with_half(c, 0.0);  // bool results are exact in every dtype
}

void add_predicate_cases(std::vector<Case>& cases, const Predicate& predicate) {
  auto math = predicate.math;
  const Reference reference = [math](const std::vector<RefTensor>& in, const Attrs&) {
    return std::vector<RefTensor>{unary(in[0], [math](double x) { return as_bit(math(x)); }, kBool)};
  };
  using enum Layout;
  for (const Variant& variant : unary_variants(integers(-2, 3)))
    cases.push_back(bool_case(predicate.op, variant.label, variant.inputs, reference));
  cases.push_back(bool_case(predicate.op, "NaN, +-inf, -0.0 [3,5]", {special_values({3, 5})}, reference));
  cases.push_back(bool_case(predicate.op, "NaN, +-inf, -0.0 transposed [4,5]", {special_values({4, 5}, Transposed)},
                            reference));
  cases.push_back(bool_case(predicate.op, "NaN, +-inf, -0.0 large [131,257] (parallel path)",
                            {special_values({131, 257})}, reference));
  cases.push_back(bool_case(predicate.op, "int64 [3,4]", {{{3, 4}, indices(-2, 3)}}, reference));
  cases.push_back(bool_case(predicate.op, "bool [3,4]", {{{3, 4}, booleans()}}, reference));
}

void add_logical_cases(std::vector<Case>& cases, const Logical& logical) {
  auto math = logical.math;
  const Reference reference = [math](const std::vector<RefTensor>& in, const Attrs&) {
    return std::vector<RefTensor>{
        binary(in[0], in[1], [math](double a, double b) { return as_bit(math(a != 0.0, b != 0.0)); }, kBool)};
  };
  // Whole numbers put zeros in both operands.
  for (const Variant& variant : binary_variants(integers(-1, 2), integers(-1, 2)))
    cases.push_back(bool_case(logical.op, variant.label, variant.inputs, reference));
  cases.push_back(bool_case(logical.op, "NaN, +-inf, -0.0 [3,7] with [7]",
                            {special_values({3, 7}), special_values({7})}, reference));
  cases.push_back(bool_case(logical.op, "int64 [3,4] with float [4]",
                            {{{3, 4}, indices(-1, 2)}, {{4}, integers(-1, 2)}}, reference));
  cases.push_back(bool_case(logical.op, "bool [3,4] with bool [3,1]", {{{3, 4}, booleans()}, {{3, 1}, booleans()}},
                            reference));
}

void add_any_all_cases(std::vector<Case>& cases) {
  using enum Layout;
  struct Shape {
    const char* label;
    InputSpec input;
    Dims dims;
    bool keepdim;
  };
  const Shape shapes[] = {
      {"[3,4,5] all dims", {{3, 4, 5}, integers(-1, 2)}, {}, false},
      {"[3,4,5] dim 1 keepdim", {{3, 4, 5}, integers(-1, 2)}, {1}, true},
      {"[3,4,5] dim -1", {{3, 4, 5}, integers(-1, 2)}, {-1}, false},
      {"[2,3] dim 0, mostly nonzero", {{2, 3}, integers(0, 9)}, {0}, false},
      {"transposed [4,5] dim 0", {{4, 5}, integers(-1, 2), Transposed}, {0}, false},
      {"strided [2,3,4] dim 1", {{2, 3, 4}, integers(-1, 2), Strided}, {1}, false},
      {"expanded [3,4] dim 0", {{3, 4}, integers(-1, 2), Expanded}, {0}, false},
      {"size-0 [0,3] dim 1", {{0, 3}, integers(-1, 2)}, {1}, false},
      {"size-0 [2,0] dim 1 (empty groups)", {{2, 0}, integers(-1, 2)}, {1}, false},
      {"0-d", {{}, integers(-1, 2)}, {}, false},
      {"NaN, +-inf, -0.0 [3,7] dim 1", special_values({3, 7}), {1}, false},
      {"large [131,257] dim 1 (parallel path)", {{131, 257}, integers(0, 40)}, {1}, false},
      {"large [131,257] dim 0 (parallel path)", {{131, 257}, integers(0, 40)}, {0}, false},
      {"int64 [3,4] dim 1", {{3, 4}, indices(-1, 2)}, {1}, false},
      {"bool [3,4] dim 0", {{3, 4}, booleans()}, {0}, false},
  };
  for (const Shape& shape : shapes) {
    for (bool is_any : {true, false}) {
      Case c = bool_case(is_any ? "any" : "all", shape.label, {shape.input},
                         [is_any](const std::vector<RefTensor>& in, const Attrs& attrs) {
                           auto math = [is_any](const std::vector<double>& values) {
                             bool result = !is_any;
                             for (double value : values)
                               result = is_any ? (result || value != 0.0) : (result && value != 0.0);
                             return as_bit(result);
                           };
                           return std::vector<RefTensor>{
                               reduce(in[0], attrs.get<Dims>("dims"), attrs.get<bool>("keepdim"), math, kBool)};
                         });
      c.attrs = Attrs{{"dims", shape.dims}, {"keepdim", shape.keepdim}};
      cases.push_back(c);
    }
  }
}

std::vector<Case> logical_cases() {
  std::vector<Case> cases;
  for (const Predicate& predicate : kPredicates) add_predicate_cases(cases, predicate);
  for (const Logical& logical : kLogicals) add_logical_cases(cases, logical);
  add_any_all_cases(cases);
  return cases;
}

const CaseRegistration registration("logical", logical_cases);

TEST_CASE("conformance: isnan, isinf, isfinite, the logical ops, any and all match exact references") {
  run_cases(logical_cases());
}

}  // namespace
}  // namespace conformance::cases_logical
