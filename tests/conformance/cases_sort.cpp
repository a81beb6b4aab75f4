// Conformance cases for sort and topk: values and int64 indices against a stable float64 sort
// (ties from whole-number inputs keep their input order), every layout, integer and bool inputs,
// size-0 dims, k = 0 and k = n, and gradients (on distinct values) to second order.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "reference.h"

namespace conformance::cases_sort {
namespace {

// The first `kept` elements (-1: all) of each row along dim in a stable sort, NaN largest.
std::vector<RefTensor> sorted_rows(const RefTensor& in, int64_t dim, bool descending, int64_t kept) {
  const int rank = in.sizes.size();
  int64_t outer = 1, length = 1, inner = 1;
  Dims sizes = in.sizes;
  const int d = rank == 0 ? 0 : wrap(dim, rank);
  for (int i = 0; i < rank; ++i) (i < d ? outer : i == d ? length : inner) *= in.sizes[i];
  if (kept < 0 || rank == 0) kept = length;
  if (rank > 0) sizes[d] = kept;
  RefTensor values{.sizes = sizes, .values = std::vector<double>(static_cast<size_t>(sizes.product())),
                   .dtype = in.dtype};  // the input's dtype, integers and bool included
  RefTensor indices{.sizes = sizes, .values = values.values, .dtype = ember::kInt64};
  auto before = [descending](double a, double b) {
    const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
    if (a_nan || b_nan) return descending ? a_nan && !b_nan : b_nan && !a_nan;
    return descending ? a > b : a < b;
  };
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t r) { return in.values[static_cast<size_t>((o * length + r) * inner + i)]; };
      std::vector<int64_t> order(static_cast<size_t>(length));
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return before(at(a), at(b)); });
      for (int64_t r = 0; r < kept; ++r) {
        const auto out = static_cast<size_t>((o * kept + r) * inner + i);
        values.values[out] = at(order[r]);
        indices.values[out] = static_cast<double>(order[r]);
      }
    }
  }
  return {values, indices};
}

Case sort_case(const std::string& label, const InputSpec& input, int64_t dim, bool descending, bool gradcheck = true) {
  Case c{.op = "sort",
         .label = label + (descending ? ", descending" : ""),
         .inputs = {input},
         .attrs = {{"dim", dim}, {"descending", descending}},
         .reference = [](const std::vector<RefTensor>& in, const Attrs& attrs) {
           return sorted_rows(in[0], attrs.get<int64_t>("dim"), attrs.get<bool>("descending"), -1);
         },
         .float32 = {0.0, 0.0},  // values are copied, never computed
         .float64 = {0.0, 0.0},
         .gradcheck = gradcheck};
  return with_half(c, 0.0);
}

Case topk_case(const std::string& label, const InputSpec& input, int64_t k, int64_t dim, bool largest,
               bool gradcheck = true) {
  Case c{.op = "topk",
         .label = label + (largest ? ", largest" : ", smallest"),
         .inputs = {input},
         .attrs = {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", true}},
         .reference = [](const std::vector<RefTensor>& in, const Attrs& attrs) {
           return sorted_rows(in[0], attrs.get<int64_t>("dim"), attrs.get<bool>("largest"), attrs.get<int64_t>("k"));
         },
         .float32 = {0.0, 0.0},
         .float64 = {0.0, 0.0},
         .gradcheck = gradcheck};
  return with_half(c, 0.0);
}

std::vector<Case> sort_cases() {
  using enum Layout;
  using ember::kInt32;
  using ember::kInt64;
  std::vector<Case> cases;
  for (bool flag : {false, true}) {
    cases.push_back(sort_case("[3,4,5] dim 1", {{3, 4, 5}, distinct()}, 1, flag));
    cases.push_back(sort_case("[3,4,5] dim -1", {{3, 4, 5}, distinct()}, -1, flag));
    cases.push_back(sort_case("[3,4,5] dim 0", {{3, 4, 5}, distinct()}, 0, flag));
    cases.push_back(sort_case("transposed [4,5] dim 0", {{4, 5}, distinct(), Transposed}, 0, flag));
    cases.push_back(sort_case("strided [2,3,4] dim 2", {{2, 3, 4}, distinct(), Strided}, 2, flag));
    cases.push_back(sort_case("expanded [3,4] dim 0 (all ties)", {{3, 4}, distinct(), Expanded}, 0, flag));
    cases.push_back(sort_case("ties [4,9] dim 1", {{4, 9}, integers(-2, 3)}, 1, flag, false));
    cases.push_back(sort_case("size-0 [0,3] dim 0", {{0, 3}, distinct()}, 0, flag));
    cases.push_back(sort_case("size-0 [2,0] dim 0", {{2, 0}, distinct()}, 0, flag));
    cases.push_back(sort_case("size-1 [1,1] dim 1", {{1, 1}, distinct()}, 1, flag));
    cases.push_back(sort_case("0-d", {{}, distinct()}, 0, flag));
    cases.push_back(sort_case("large [131,257] dim 1 (parallel path)", {{131, 257}, real()}, 1, flag, false));
    cases.push_back(sort_case("int64 [3,6] dim 1", {{3, 6}, indices(-4, 4)}, 1, flag));
    cases.push_back(sort_case("int32 [6,3] dim 0", {{6, 3}, integers(-4, 4), Contiguous, true, kInt32}, 0, flag));
    cases.push_back(sort_case("bool [3,7] dim 1", {{3, 7}, booleans()}, 1, flag));

    cases.push_back(topk_case("[3,4,5] k 2 dim 1", {{3, 4, 5}, distinct()}, 2, 1, flag));
    cases.push_back(topk_case("[3,4,5] k 0 dim -1", {{3, 4, 5}, distinct()}, 0, -1, flag));
    cases.push_back(topk_case("[3,4,5] k n dim 0", {{3, 4, 5}, distinct()}, 3, 0, flag));
    cases.push_back(topk_case("transposed [4,5] k 3 dim 0", {{4, 5}, distinct(), Transposed}, 3, 0, flag));
    cases.push_back(topk_case("strided [2,3,4] k 1 dim 2", {{2, 3, 4}, distinct(), Strided}, 1, 2, flag));
    cases.push_back(topk_case("expanded [3,4] k 2 dim 0", {{3, 4}, distinct(), Expanded}, 2, 0, flag));
    cases.push_back(topk_case("ties [4,9] k 4 dim 1", {{4, 9}, integers(-2, 3)}, 4, 1, flag, false));
    cases.push_back(topk_case("size-0 [0,3] k 2 dim 1", {{0, 3}, distinct()}, 2, 1, flag));
    cases.push_back(topk_case("size-0 [2,0] k 0 dim 1", {{2, 0}, distinct()}, 0, 1, flag));
    cases.push_back(topk_case("0-d k 1", {{}, distinct()}, 1, 0, flag));
    cases.push_back(topk_case("0-d k 0 (a 0-d result)", {{}, distinct()}, 0, -1, flag));
    cases.push_back(topk_case("large [131,257] k 9 dim 1 (parallel path)", {{131, 257}, real()}, 9, 1, flag, false));
    cases.push_back(topk_case("int64 [3,6] k 2 dim 1", {{3, 6}, indices(-4, 4)}, 2, 1, flag));
  }
  return cases;
}

const CaseRegistration registration("sort", sort_cases);

TEST_CASE("conformance: sort and topk match a stable float64 sort and finite differences") { run_cases(sort_cases()); }

}  // namespace
}  // namespace conformance::cases_sort
