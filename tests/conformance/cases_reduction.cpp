// Conformance cases for reductions (sum, mean, prod, amax, amin, var, argmax, argmin) and softmax /
// log_softmax along a dim.
#include <doctest/doctest.h>

#include <cmath>

#include "reference.h"

namespace conformance::cases_reduction {
namespace {

using ember::kInt64;
using GroupMath = std::function<double(const std::vector<double>&)>;

struct ReductionShape {
  const char* label;
  InputSpec input;
  Dims dims;
  bool keepdim;
  bool empty_groups = false;  // some reduced group has no elements (only sum defines a value)
  bool gradcheck = true;
};

std::vector<ReductionShape> reduction_shapes(const Domain& domain, const Domain& large_domain) {
  using enum Layout;
  return {
      {"[3,4,5] all dims", {{3, 4, 5}, domain}, {}, false},
      {"[3,4,5] dim 1 keepdim", {{3, 4, 5}, domain}, {1}, true},
      {"[3,4,5] dims 0,2", {{3, 4, 5}, domain}, {0, 2}, false},
      {"[3,4,5] dim -1", {{3, 4, 5}, domain}, {-1}, false},
      {"transposed [4,5] dim 0", {{4, 5}, domain, Transposed}, {0}, false},
      {"strided [2,3,4] dim 1 keepdim", {{2, 3, 4}, domain, Strided}, {1}, true},
      {"expanded [3,4] dim 0", {{3, 4}, domain, Expanded}, {0}, false},
      {"size-0 [0,3] dim 1", {{0, 3}, domain}, {1}, false},
      {"size-1 [1,1] all dims keepdim", {{1, 1}, domain}, {}, true},
      {"0-d", {{}, domain}, {}, false},
      {"large [131,257] dim 1 (parallel path)", {{131, 257}, large_domain}, {1}, false, false, false},
      {"large [131,257] dim 0 (parallel path)", {{131, 257}, large_domain}, {0}, false, false, false},
  };
}

Case reduction_case(const char* op, const ReductionShape& shape, Attrs attrs, GroupMath math,
                    std::optional<DType> out_dtype = {}, const std::string& suffix = "") {
  attrs.set("dims", shape.dims);
  attrs.set("keepdim", shape.keepdim);
  Case c{.op = op,
         .label = shape.label + suffix,
         .inputs = {shape.input},
         .attrs = attrs,
         .reference = [math, out_dtype](const std::vector<RefTensor>& in, const Attrs& attrs) {
           return std::vector<RefTensor>{
               reduce(in[0], attrs.get<Dims>("dims"), attrs.get<bool>("keepdim"), math, out_dtype)};
         },
         // Long fp32 sums may round each partial sum; 1e-4 covers 33k terms of magnitude 2.
         .float32 = {1e-4, 1e-4},
         .gradcheck = shape.gradcheck};
  return with_half(c, 2e-2);
}

double product_of(const std::vector<double>& values) {
  double product = 1.0;
  for (double value : values) product *= value;
  return product;
}

double variance(const std::vector<double>& values, int64_t correction) {
  const double mean = mean_of(values);
  double squares = 0.0;
  for (double value : values) squares += (value - mean) * (value - mean);
  return squares / static_cast<double>(static_cast<int64_t>(values.size()) - correction);
}

// Index of the first maximum (or minimum) in row-major order, PyTorch's choice among ties.
double first_index(const std::vector<double>& values, bool largest) {
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i)
    if (largest ? values[i] > values[best] : values[i] < values[best]) best = i;
  return static_cast<double>(best);
}

std::vector<double> softmax_of(const std::vector<double>& row) {
  const double peak = max_of(row);
  std::vector<double> out;
  double total = 0.0;
  for (double value : row) total += std::exp(value - peak);
  for (double value : row) out.push_back(std::exp(value - peak) / total);
  return out;
}
std::vector<double> log_softmax_of(const std::vector<double>& row) {
  const double peak = max_of(row);
  double total = 0.0;
  for (double value : row) total += std::exp(value - peak);
  std::vector<double> out;
  for (double value : row) out.push_back(value - peak - std::log(total));
  return out;
}

void add_arg_cases(std::vector<Case>& cases, const char* op, bool largest) {
  using enum Layout;
  struct ArgShape {
    const char* label;
    InputSpec input;
    std::optional<int64_t> dim;
    bool keepdim;
  };
  const ArgShape shapes[] = {
      {"[3,4,5] flattened", {{3, 4, 5}, distinct()}, {}, false},
      {"[3,4,5] flattened keepdim", {{3, 4, 5}, distinct()}, {}, true},
      {"[3,4,5] dim 1", {{3, 4, 5}, distinct()}, 1, false},
      {"[3,4,5] dim -1 keepdim", {{3, 4, 5}, distinct()}, -1, true},
      {"transposed [4,5] dim 0", {{4, 5}, distinct(), Transposed}, 0, false},
      {"strided [2,3,4] dim 2", {{2, 3, 4}, distinct(), Strided}, 2, false},
      {"expanded [3,4] dim 0 (ties pick the first)", {{3, 4}, distinct(), Expanded}, 0, false},
      {"size-0 [0,3] dim 1", {{0, 3}, distinct()}, 1, false},
      {"0-d", {{}, distinct()}, {}, false},
      {"large [131,257] dim 1 (parallel path)", {{131, 257}, real()}, 1, false},
  };
  for (const ArgShape& shape : shapes) {
    Attrs attrs{{"keepdim", shape.keepdim}};
    if (shape.dim) attrs.set("dim", *shape.dim);
    Case c{.op = op, .label = shape.label, .inputs = {shape.input}, .attrs = attrs,
           .reference = [largest](const std::vector<RefTensor>& in, const Attrs& attrs) {
             const Dims dims = attrs.has("dim") ? Dims{attrs.get<int64_t>("dim")} : Dims{};
             auto math = [largest](const std::vector<double>& values) { return first_index(values, largest); };
             return std::vector<RefTensor>{reduce(in[0], dims, attrs.get<bool>("keepdim"), math, kInt64)};
           }};
    cases.push_back(with_half(c, 0.0));  // indices are exact in every dtype
  }
}

std::vector<Case> reduction_cases() {
  std::vector<Case> cases;
  for (const ReductionShape& shape : reduction_shapes(real(), real())) {
    cases.push_back(reduction_case("sum", shape, {}, sum_of));
    if (!shape.empty_groups) cases.push_back(reduction_case("mean", shape, {}, mean_of));
  }
  // Empty reduced groups: sum is 0 (mean would be NaN, which poisoning cannot tell from unwritten).
  cases.push_back(reduction_case("sum", {"size-0 [0,3] dim 0", {{0, 3}, real()}, {0}, false, true}, {}, sum_of));
  // prod: long groups draw from [0.8, 1.25], so 257 factors neither overflow nor underflow.
  for (const ReductionShape& shape : reduction_shapes(real(), real(0.8, 1.25)))
    cases.push_back(reduction_case("prod", shape, {}, product_of));
  cases.push_back(reduction_case("prod", {"size-0 [0,3] dim 0", {{0, 3}, real()}, {0}, false, true}, {}, product_of));
  // Whole numbers put zeros (one, two or more per group) in: the values are exact; the gradients
  // with zeros are checked in tests/runtime/test_prod_cumsum.cpp (two zeros have no second derivative).
  for (const ReductionShape& shape : reduction_shapes(integers(-2, 3), integers(-1, 2))) {
    ReductionShape with_zeros = shape;
    with_zeros.gradcheck = false;
    cases.push_back(reduction_case("prod", with_zeros, {}, product_of, {}, ", whole numbers with zeros"));
  }
  const ReductionShape int64_shape{"int64 [3,4] dim 1", {{3, 4}, indices(-3, 4)}, {1}, false};
  cases.push_back(reduction_case("prod", int64_shape, {}, product_of, kInt64));

  // Distinct values: amax and amin have no ties, so the gradient is well defined.
  for (const ReductionShape& shape : reduction_shapes(distinct(), distinct())) {
    if (shape.input.sizes.product() == 0) continue;  // no maximum of nothing
    cases.push_back(reduction_case("amax", shape, {}, max_of));
    cases.push_back(reduction_case("amin", shape, {}, min_of));
  }
  for (const ReductionShape& shape : reduction_shapes(real(), real())) {
    if (shape.input.sizes.product() == 0) continue;
    for (int64_t correction : {int64_t{1}, int64_t{0}}) {
      // A group of one element has no unbiased variance.
      if (correction == 1 && (shape.input.sizes.product() == 1 || shape.label == std::string("0-d"))) continue;
      cases.push_back(reduction_case("var", shape, {{"correction", correction}},
                                     [correction](const std::vector<double>& v) { return variance(v, correction); },
                                     {}, fmt::format(", correction {}", correction)));
    }
  }
  add_arg_cases(cases, "argmax", true);
  add_arg_cases(cases, "argmin", false);

  using enum Layout;
  struct SoftmaxShape {
    const char* label;
    InputSpec input;
    int64_t dim;
    bool gradcheck = true;
  };
  const SoftmaxShape softmax_shapes[] = {
      {"[3,4,5] dim -1", {{3, 4, 5}, real(-3, 3)}, -1},
      {"[3,4,5] dim 1", {{3, 4, 5}, real(-3, 3)}, 1},
      {"[3,4,5] dim 0", {{3, 4, 5}, real(-3, 3)}, 0},
      {"transposed [4,5] dim 1", {{4, 5}, real(-3, 3), Transposed}, 1},
      {"strided [2,3,4] dim 0", {{2, 3, 4}, real(-3, 3), Strided}, 0},
      {"expanded [3,4] dim 1", {{3, 4}, real(-3, 3), Expanded}, 1},
      {"size-0 [0,3] dim 1", {{0, 3}, real()}, 1},
      {"size-1 [3,1] dim 1", {{3, 1}, real()}, 1},
      {"0-d", {{}, real()}, 0},
      {"large logits [4,5] dim 1 (needs max subtraction)", {{4, 5}, real(-80, 80)}, 1},
      {"large [131,257] dim 1 (parallel path)", {{131, 257}, real(-3, 3)}, 1, false},
      {"large [131,257] dim 0 (parallel path)", {{131, 257}, real(-3, 3)}, 0, false},
  };
  for (const SoftmaxShape& shape : softmax_shapes) {
    for (auto [op, math] : {std::pair{"softmax", &softmax_of}, std::pair{"log_softmax", &log_softmax_of}}) {
      Case c{.op = op, .label = shape.label, .inputs = {shape.input}, .attrs = {{"dim", shape.dim}},
             .reference = [math](const std::vector<RefTensor>& in, const Attrs& attrs) {
               return std::vector<RefTensor>{along(in[0], attrs.get<int64_t>("dim"), math)};
             },
             .gradcheck = shape.gradcheck};
      cases.push_back(with_half(c, 2e-2));
    }
  }
  return cases;
}

const CaseRegistration registration("reduction", reduction_cases);

TEST_CASE("conformance: reductions and softmax match float64 references and finite differences") {
  run_cases(reduction_cases());
}

}  // namespace
}  // namespace conformance::cases_reduction
