// Conformance cases for the running reductions: cumsum (forward and reversed), cumprod, cummax and
// cummin (values and int64 indices) and logcumsumexp (forward and reversed): float64 references,
// integer and bool inputs (cumsum and cumprod to int64, cummax and cummin in their own dtype),
// whole-number inputs with zeros and ties, and gradients to second order.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference.h"

namespace conformance::cases_scan {
namespace {

// out[i] = combine(out[i - 1], x[i]) from `identity`, from the end when `reverse`.
template <typename Combine>
std::vector<double> running(const std::vector<double>& slice, bool reverse, double identity, Combine combine) {
  std::vector<double> out(slice.size());
  double total = identity;
  for (size_t j = 0; j < slice.size(); ++j) {
    const size_t i = reverse ? slice.size() - 1 - j : j;
    total = combine(total, slice[i]);
    out[i] = total;
  }
  return out;
}

// log(sum exp) of the elements so far, from the largest of them (exp of the others relative to it).
std::vector<double> log_running_sum_exp(const std::vector<double>& slice, bool reverse) {
  std::vector<double> out(slice.size());
  for (size_t j = 0; j < slice.size(); ++j) {
    const size_t i = reverse ? slice.size() - 1 - j : j;
    const size_t first = reverse ? i : 0, last = reverse ? slice.size() - 1 : i;
    double largest = -std::numeric_limits<double>::infinity();
    for (size_t k = first; k <= last; ++k) largest = std::max(largest, slice[k]);
    double total = 0.0;
    for (size_t k = first; k <= last; ++k) total += std::exp(slice[k] - largest);
    out[i] = largest + std::log(total);
  }
  return out;
}

// The running maximum (minimum) and where it was reached: a tie moves to the later index.
std::vector<double> running_extremum(const std::vector<double>& slice, bool max, bool want_indices) {
  std::vector<double> values, indices;
  for (size_t i = 0; i < slice.size(); ++i) {
    const bool replaces = i == 0 || (max ? slice[i] >= values.back() : slice[i] <= values.back());
    values.push_back(replaces ? slice[i] : values.back());
    indices.push_back(replaces ? static_cast<double>(i) : indices.back());
  }
  return want_indices ? indices : values;
}

Case cumsum_case(const std::string& label, const InputSpec& input, int64_t dim, bool reverse,
                 std::optional<DType> out_dtype = {}, bool gradcheck = true) {
  Case c{.op = "cumsum",
         .label = label + (reverse ? ", reverse" : ""),
         .inputs = {input},
         .attrs = {{"dim", dim}, {"reverse", reverse}},
         .reference = [out_dtype](const std::vector<RefTensor>& in, const Attrs& attrs) {
           const bool reverse = attrs.get<bool>("reverse");
           RefTensor out = along(in[0], attrs.get<int64_t>("dim"), [reverse](const std::vector<double>& slice) {
             return running(slice, reverse, 0.0, [](double a, double b) { return a + b; });
           });
           out.dtype = out_dtype;
           return std::vector<RefTensor>{out};
         },
         // 257 terms of magnitude 2 in a float32 result: rounding of the stored sums only.
         .float32 = {1e-5, 1e-5},
         .gradcheck = gradcheck};
  return with_half(c, 2e-2);
}

Case cumprod_case(const std::string& label, const InputSpec& input, int64_t dim, std::optional<DType> out_dtype = {},
                  bool gradcheck = true) {
  Case c{.op = "cumprod",
         .label = label,
         .inputs = {input},
         .attrs = {{"dim", dim}},
         .reference = [out_dtype](const std::vector<RefTensor>& in, const Attrs& attrs) {
           RefTensor out = along(in[0], attrs.get<int64_t>("dim"), [](const std::vector<double>& slice) {
             return running(slice, false, 1.0, [](double a, double b) { return a * b; });
           });
           out.dtype = out_dtype;
           return std::vector<RefTensor>{out};
         },
         // The product is accumulated in double and rounded once into float32.
         .float32 = {1e-6, 1e-30},
         .gradcheck = gradcheck};
  return with_half(c, 2e-2);
}

Case extremum_case(const char* op, const std::string& label, const InputSpec& input, int64_t dim,
                   bool gradcheck = true) {
  const bool max = std::string(op) == "cummax";
  Case c{.op = op,
         .label = label,
         .inputs = {input},
         .attrs = {{"dim", dim}},
         .reference = [max](const std::vector<RefTensor>& in, const Attrs& attrs) {
           const int64_t dim = attrs.get<int64_t>("dim");
           RefTensor values = along(in[0], dim, [max](const std::vector<double>& s) {
             return running_extremum(s, max, false);
           });  // the input's dtype, integers and bool included
           RefTensor indices = along(in[0], dim, [max](const std::vector<double>& s) {
             return running_extremum(s, max, true);
           });
           indices.dtype = ember::kInt64;
           return std::vector<RefTensor>{values, indices};
         },
         .float32 = {0.0, 0.0},  // values are copied, never computed
         .float64 = {0.0, 0.0},
         .gradcheck = gradcheck};
  return with_half(c, 0.0);
}

Case logcumsumexp_case(const std::string& label, const InputSpec& input, int64_t dim, bool reverse,
                       bool gradcheck = true) {
  Case c{.op = "logcumsumexp",
         .label = label + (reverse ? ", reverse" : ""),
         .inputs = {input},
         .attrs = {{"dim", dim}, {"reverse", reverse}},
         .reference = [](const std::vector<RefTensor>& in, const Attrs& attrs) {
           const bool reverse = attrs.get<bool>("reverse");
           return std::vector<RefTensor>{along(in[0], attrs.get<int64_t>("dim"), [reverse](const std::vector<double>& s) {
             return log_running_sum_exp(s, reverse);
           })};
         },
         .float32 = {1e-6, 1e-6},  // a double accumulator rounded once
         .gradcheck = gradcheck};
  return with_half(c, 1e-2);
}

std::vector<Case> scan_cases() {
  using enum Layout;
  using ember::kInt32;
  using ember::kInt64;
  std::vector<Case> cases;
  for (bool reverse : {false, true}) {
    cases.push_back(cumsum_case("[3,4,5] dim 1", {{3, 4, 5}, real()}, 1, reverse));
    cases.push_back(cumsum_case("[3,4,5] dim -1", {{3, 4, 5}, real()}, -1, reverse));
    cases.push_back(cumsum_case("[3,4,5] dim 0", {{3, 4, 5}, real()}, 0, reverse));
    cases.push_back(cumsum_case("transposed [4,5] dim 0", {{4, 5}, real(), Transposed}, 0, reverse));
    cases.push_back(cumsum_case("strided [2,3,4] dim 2", {{2, 3, 4}, real(), Strided}, 2, reverse));
    cases.push_back(cumsum_case("expanded [3,4] dim 0", {{3, 4}, real(), Expanded}, 0, reverse));
    cases.push_back(cumsum_case("size-0 [0,3] dim 0", {{0, 3}, real()}, 0, reverse));
    cases.push_back(cumsum_case("size-0 [2,0] dim 0", {{2, 0}, real()}, 0, reverse));
    cases.push_back(cumsum_case("size-1 [1,1] dim 1", {{1, 1}, real()}, 1, reverse));
    cases.push_back(cumsum_case("0-d", {{}, real()}, 0, reverse));
    cases.push_back(cumsum_case("large [131,257] dim 1 (parallel path)", {{131, 257}, real()}, 1, reverse, {}, false));
    cases.push_back(cumsum_case("large [131,257] dim 0 (parallel path)", {{131, 257}, real()}, 0, reverse, {}, false));
    cases.push_back(cumsum_case("int64 [3,4] dim 1", {{3, 4}, indices(-5, 6)}, 1, reverse, kInt64));
    cases.push_back(cumsum_case("bool [3,4] dim 0", {{3, 4}, booleans()}, 0, reverse, kInt64));

    cases.push_back(logcumsumexp_case("[3,4,5] dim 1", {{3, 4, 5}, real(-4.0, 4.0)}, 1, reverse));
    cases.push_back(logcumsumexp_case("[3,4,5] dim -3", {{3, 4, 5}, real(-4.0, 4.0)}, -3, reverse));
    cases.push_back(logcumsumexp_case("transposed [4,5] dim 0", {{4, 5}, real(), Transposed}, 0, reverse));
    cases.push_back(logcumsumexp_case("strided [2,3,4] dim 2", {{2, 3, 4}, real(), Strided}, 2, reverse));
    cases.push_back(logcumsumexp_case("expanded [3,4] dim 0", {{3, 4}, real(), Expanded}, 0, reverse));
    cases.push_back(logcumsumexp_case("large values [3,6] dim 1", {{3, 6}, real(60.0, 80.0)}, 1, reverse));
    cases.push_back(logcumsumexp_case("size-0 [0,3] dim 1", {{0, 3}, real()}, 1, reverse));
    cases.push_back(logcumsumexp_case("size-0 [2,0] dim 1", {{2, 0}, real()}, 1, reverse));
    cases.push_back(logcumsumexp_case("0-d", {{}, real()}, -1, reverse));
    cases.push_back(
        logcumsumexp_case("large [131,257] dim 1 (parallel path)", {{131, 257}, real()}, 1, reverse, false));
  }

  cases.push_back(cumprod_case("[3,4,5] dim 1", {{3, 4, 5}, real()}, 1));
  cases.push_back(cumprod_case("[3,4,5] dim -1", {{3, 4, 5}, real()}, -1));
  cases.push_back(cumprod_case("[3,4,5] dim 0", {{3, 4, 5}, real()}, 0));
  cases.push_back(cumprod_case("transposed [4,5] dim 0", {{4, 5}, real(), Transposed}, 0));
  cases.push_back(cumprod_case("strided [2,3,4] dim 2", {{2, 3, 4}, real(), Strided}, 2));
  cases.push_back(cumprod_case("expanded [3,4] dim 0", {{3, 4}, real(), Expanded}, 0));
  // Whole numbers in [-2, 2]: rows with no zero, one, two and more; the gradient and its own
  // derivative are polynomials, so central differences are exact across the zeros.
  cases.push_back(cumprod_case("zeros [6,5] dim 1", {{6, 5}, integers(-2, 3)}, 1));
  cases.push_back(cumprod_case("zeros [5,6] dim 0", {{5, 6}, integers(-2, 3)}, 0));
  cases.push_back(cumprod_case("size-0 [0,3] dim 0", {{0, 3}, real()}, 0));
  cases.push_back(cumprod_case("size-0 [2,0] dim 1", {{2, 0}, real()}, 1));
  cases.push_back(cumprod_case("size-1 [1,1] dim 1", {{1, 1}, real()}, 1));
  cases.push_back(cumprod_case("0-d", {{}, real()}, 0));
  cases.push_back(cumprod_case("large [131,257] dim 1 (parallel path)", {{131, 257}, real(-1.25, 1.25)}, 1, {}, false));
  cases.push_back(cumprod_case("large [131,257] dim 0 (parallel path)", {{131, 257}, real(-1.25, 1.25)}, 0, {}, false));
  cases.push_back(cumprod_case("int64 [3,4] dim 1", {{3, 4}, indices(-5, 6)}, 1, kInt64));
  cases.push_back(cumprod_case("int32 [4,3] dim 0", {{4, 3}, integers(-4, 5), Contiguous, true, kInt32}, 0, kInt64));
  cases.push_back(cumprod_case("bool [3,4] dim 1", {{3, 4}, booleans()}, 1, kInt64));

  for (const char* op : {"cummax", "cummin"}) {
    cases.push_back(extremum_case(op, "[3,4,5] dim 1", {{3, 4, 5}, distinct()}, 1));
    cases.push_back(extremum_case(op, "[3,4,5] dim -1", {{3, 4, 5}, distinct()}, -1));
    cases.push_back(extremum_case(op, "[3,4,5] dim 0", {{3, 4, 5}, distinct()}, 0));
    cases.push_back(extremum_case(op, "transposed [4,5] dim 0", {{4, 5}, distinct(), Transposed}, 0));
    cases.push_back(extremum_case(op, "strided [2,3,4] dim 2", {{2, 3, 4}, distinct(), Strided}, 2));
    cases.push_back(extremum_case(op, "expanded [3,4] dim 0 (all ties)", {{3, 4}, distinct(), Expanded}, 0));
    cases.push_back(extremum_case(op, "ties [4,9] dim 1", {{4, 9}, integers(-2, 3)}, 1, false));
    cases.push_back(extremum_case(op, "size-0 [0,3] dim 0", {{0, 3}, distinct()}, 0));
    cases.push_back(extremum_case(op, "size-0 [2,0] dim 1", {{2, 0}, distinct()}, 1));
    cases.push_back(extremum_case(op, "size-1 [1,1] dim 1", {{1, 1}, distinct()}, 1));
    cases.push_back(extremum_case(op, "0-d", {{}, distinct()}, 0));
    cases.push_back(extremum_case(op, "large [131,257] dim 1 (parallel path)", {{131, 257}, real()}, 1, false));
    cases.push_back(extremum_case(op, "int64 [3,6] dim 1", {{3, 6}, indices(-4, 4)}, 1));
    cases.push_back(extremum_case(op, "int32 [6,3] dim 0", {{6, 3}, integers(-4, 4), Contiguous, true, kInt32}, 0));
    cases.push_back(extremum_case(op, "bool [3,7] dim 1", {{3, 7}, booleans()}, 1));
  }
  return cases;
}

const CaseRegistration registration("scan", scan_cases);

TEST_CASE("conformance: cumsum, cumprod, cummax, cummin and logcumsumexp match float64 references and finite differences") {
  run_cases(scan_cases());
}

}  // namespace
}  // namespace conformance::cases_scan
