// Conformance cases for cumsum (running sums along a dim, forward and reversed): float64
// references, integer and bool inputs summed to int64, and gradients to second order.
#include <doctest/doctest.h>

#include "reference.h"

namespace conformance {
namespace {

std::vector<double> running_sum(const std::vector<double>& slice, bool reverse) {
  std::vector<double> out(slice.size());
  double total = 0.0;
  for (size_t j = 0; j < slice.size(); ++j) {
    const size_t i = reverse ? slice.size() - 1 - j : j;
    total += slice[i];
    out[i] = total;
  }
  return out;
}

Case cumsum_case(const std::string& label, const InputSpec& input, int64_t dim, bool reverse,
                 std::optional<DType> out_dtype = {}, bool gradcheck = true) {
  Case c{.op = "cumsum",
         .label = label + (reverse ? ", reverse" : ""),
         .inputs = {input},
         .attrs = {{"dim", dim}, {"reverse", reverse}},
         .reference = [out_dtype](const std::vector<RefTensor>& in, const Attrs& attrs) {
           const bool reverse = attrs.get<bool>("reverse");
           RefTensor out = along(in[0], attrs.get<int64_t>("dim"),
                                 [reverse](const std::vector<double>& slice) { return running_sum(slice, reverse); });
           out.dtype = out_dtype;
           return std::vector<RefTensor>{out};
         },
         // 257 terms of magnitude 2 in a float32 result: rounding of the stored sums only.
         .float32 = {1e-5, 1e-5},
         .gradcheck = gradcheck};
  return with_half(c, 2e-2);
}

std::vector<Case> scan_cases() {
  using enum Layout;
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
    cases.push_back(cumsum_case("int64 [3,4] dim 1", {{3, 4}, indices(-5, 6)}, 1, reverse, ember::kInt64));
    cases.push_back(cumsum_case("bool [3,4] dim 0", {{3, 4}, booleans()}, 0, reverse, ember::kInt64));
  }
  return cases;
}

const CaseRegistration registration("scan", scan_cases);

TEST_CASE("conformance: cumsum matches float64 references and finite differences") { run_cases(scan_cases()); }

}  // namespace
}  // namespace conformance
