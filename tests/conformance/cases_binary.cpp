// Conformance cases for broadcasting binary ops, comparisons and where, including type promotion.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_binary {
namespace {

using ember::kBool;

using BinaryMath = std::function<double(double, double)>;

Case binary_case(const char* op, const Variant& variant, Attrs attrs, BinaryMath math,
                 std::optional<DType> out_dtype = {}, const std::string& suffix = "") {
  Case c{.op = op,
         .label = variant.label + suffix,
         .inputs = variant.inputs,
         .attrs = attrs,
         .reference = [math, out_dtype](const std::vector<RefTensor>& in, const Attrs&) {
           return std::vector<RefTensor>{binary(in[0], in[1], math, out_dtype)};
         },
         .gradcheck = variant.gradcheck};
  return with_half(c, 1e-2);
}

struct BinaryOp {
  const char* op;
  Attrs attrs;
  BinaryMath math;
  Domain a, b;
};

std::vector<BinaryOp> binary_ops() {
  return {
      {"add", {{"alpha", 1.0}}, [](double a, double b) { return a + b; }, real(), real()},
      {"sub", {{"alpha", 1.0}}, [](double a, double b) { return a - b; }, real(), real()},
      {"mul", {}, [](double a, double b) { return a * b; }, real(), real()},
      {"div", {}, [](double a, double b) { return a / b; }, real(), avoiding({0.0}, -2.0, 2.0)},
      // pow's exponent gradient is a^b log(a): bases stay positive.
      {"pow", {}, [](double a, double b) { return std::pow(a, b); }, positive(0.5, 2.0), real()},
      // Random continuous values never tie, so the gradient has no kink to land on.
      {"maximum", {}, [](double a, double b) { return std::max(a, b); }, real(), real()},
      {"minimum", {}, [](double a, double b) { return std::min(a, b); }, real(), real()},
  };
}

struct Comparison {
  const char* op;
  bool (*math)(double, double);
};
const Comparison kComparisons[] = {
    {"eq", [](double a, double b) { return a == b; }}, {"ne", [](double a, double b) { return a != b; }},
    {"lt", [](double a, double b) { return a < b; }},  {"le", [](double a, double b) { return a <= b; }},
    {"gt", [](double a, double b) { return a > b; }},  {"ge", [](double a, double b) { return a >= b; }},
};

std::vector<RefTensor> where_reference(const std::vector<RefTensor>& in, const Attrs&) {
  const Dims sizes = broadcast(broadcast(in[0].sizes, in[1].sizes), in[2].sizes);
  RefTensor out = filled(sizes, 0.0);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.values[i] = broadcast_at(in[0], sizes, i) != 0.0 ? broadcast_at(in[1], sizes, i) : broadcast_at(in[2], sizes, i);
  return {out};
}

std::vector<Case> binary_cases() {
  std::vector<Case> cases;
  for (const BinaryOp& op : binary_ops())
    for (const Variant& variant : binary_variants(op.a, op.b))
      cases.push_back(binary_case(op.op, variant, op.attrs, op.math));

  // alpha scales the second operand (and its gradient).
  const Variant broadcast_variant = binary_variants(real(), real())[2];
  cases.push_back(binary_case("add", broadcast_variant, {{"alpha", -2.5}},
                              [](double a, double b) { return a - 2.5 * b; }, {}, ", alpha -2.5"));
  cases.push_back(binary_case("sub", broadcast_variant, {{"alpha", 0.5}},
                              [](double a, double b) { return a - 0.5 * b; }, {}, ", alpha 0.5"));

  // Type promotion: float32 with float64 gives float64; float32 with int64 stays float32.
  Case promote{.op = "add",
               .label = "promotion float32 + float64",
               .inputs = {{{3, 4}, real(), Layout::Contiguous, true, ember::kFloat32},
                          {{4}, real(), Layout::Contiguous, true, ember::kFloat64}},
               .attrs = {{"alpha", 1.0}},
               .reference = [](const std::vector<RefTensor>& in, const Attrs&) {
                 return std::vector<RefTensor>{binary(in[0], in[1], std::plus<double>(), ember::kFloat64)};
               }};
  cases.push_back(promote);
  Case promote_int{.op = "mul",
                   .label = "promotion float32 * int64",
                   .inputs = {{{3, 4}, real(), Layout::Contiguous, true, ember::kFloat32},
                              {{3, 1}, indices(-3, 4)}},
                   .reference = [](const std::vector<RefTensor>& in, const Attrs&) {
                     return std::vector<RefTensor>{binary(in[0], in[1], std::multiplies<double>(), ember::kFloat32)};
                   }};
  cases.push_back(promote_int);

  // Comparisons on whole numbers, so equal pairs occur; results are bool.
  for (const Comparison& comparison : kComparisons) {
    auto math = comparison.math;
    for (const Variant& variant : binary_variants(integers(-2, 3), integers(-2, 3)))
      cases.push_back(binary_case(comparison.op, variant, {},
                                  [math](double a, double b) { return math(a, b) ? 1.0 : 0.0; }, kBool));
    Case integral = binary_case(comparison.op, {"int64 [3,4] with [4]", {{{3, 4}, indices(-2, 3)}, {{4}, indices(-2, 3)}}},
                                {}, [math](double a, double b) { return math(a, b) ? 1.0 : 0.0; }, kBool);
    cases.push_back(integral);
  }

  // where(condition, a, b) broadcasts all three; the condition gets no gradient.
  using enum Layout;
  const std::vector<Variant> where_variants = {
      {"same shape [3,4]", {{{3, 4}, booleans()}, {{3, 4}, real()}, {{3, 4}, real()}}},
      {"broadcast [3,4] with [4] and [3,1]", {{{3, 4}, booleans()}, {{4}, real()}, {{3, 1}, real()}}},
      {"broadcast [3,1] condition with 0-d", {{{3, 1}, booleans()}, {{}, real()}, {{1, 4}, real()}}},
      {"transposed and strided", {{{4, 5}, booleans(), Transposed}, {{4, 5}, real(), Strided}, {{4, 5}, real(), Transposed}}},
      {"size-0 [0,3]", {{{0, 3}, booleans()}, {{0, 3}, real()}, {{3}, real()}}},
      {"0-d", {{{}, booleans()}, {{}, real()}, {{}, real()}}},
      {"large [131,257] (parallel path)", {{{131, 257}, booleans()}, {{131, 257}, real()}, {{257}, real()}}, false},
  };
  for (const Variant& variant : where_variants) {
    Case c{.op = "where", .label = variant.label, .inputs = variant.inputs, .reference = where_reference,
           .gradcheck = variant.gradcheck};
    cases.push_back(with_half(c, 1e-2));
  }
  return cases;
}

const CaseRegistration registration("binary", binary_cases);

TEST_CASE("conformance: binary ops, comparisons and where match float64 references and finite differences") {
  run_cases(binary_cases());
}

}  // namespace
}  // namespace conformance::cases_binary
