// sort, argsort, topk and kthvalue (runtime/functional_sort.h) against float64 loops: ties (a
// stable order), NaN (larger than every number), every dim, descending, non-contiguous inputs,
// integer and bool dtypes, empty dims, k = 0 and k = n, 0-d inputs, and the Tensor methods.
#include <doctest/doctest.h>

#include "composite_loss_checks.h"
#include "sort_reference.h"

namespace test_sort {

using namespace ember;
using namespace ember::testing;

namespace {

Tensor tied_tensor(const Dims& sizes, uint32_t seed, DType dtype) {
  const bool with_nan = is_floating(dtype);
  const double low = dtype == kBool ? 0 : -3, high = dtype == kBool ? 1 : 3;
  return from_vector<double>(tied_values(sizes.product(), seed, with_nan, low, high), sizes).to(dtype);
}

void check_sorted(const std::tuple<Tensor, Tensor>& result, const SortedRows& expected, DType dtype) {
  const auto& [values, indices] = result;
  CHECK(values.dtype() == dtype);
  CHECK(indices.dtype() == kInt64);
  CHECK(values.sizes() == indices.sizes());
  check_exactly(values, expected.values);
  check_exactly(indices, expected.indices);
}

}  // namespace

TEST_CASE("sort orders every row like a stable float64 sort, NaN last ascending and first descending") {
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64, kInt32, kBool}) {
    const Tensor input = tied_tensor({3, 4, 5}, 81, dtype);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      for (bool descending : {false, true}) {
        INFO(dtype_name(dtype) << " dim " << dim << " descending " << descending);
        const SortedRows expected = reference_sort(input, dim, descending, input.size(dim));
        check_sorted(sort(input, dim, descending), expected, dtype);
        check_sorted(input.sort(dim, descending, true), expected, dtype);
        check_exactly(argsort(input, dim, descending), expected.indices);
        check_exactly(input.argsort(dim, descending), expected.indices);
      }
    }
  }
}

TEST_CASE("sort reads transposed and strided inputs and defaults to the last dim, ascending") {
  const Tensor base = tied_tensor({6, 5}, 82, kFloat32);
  const Tensor transposed = base.t();
  const Tensor strided = base.slice(0, 0, 6, 2);
  for (const Tensor& input : {transposed, strided}) {
    CHECK_FALSE(input.is_contiguous());
    for (int64_t dim : {0, 1}) {
      INFO("shape " << input.sizes().str() << " dim " << dim);
      check_sorted(sort(input, dim, true), reference_sort(input, dim, true, input.size(dim)), kFloat32);
    }
    check_sorted(sort(input), reference_sort(input, -1, false, input.size(-1)), kFloat32);
  }
}

TEST_CASE("sort keeps equal values in their input order in both directions, whatever stable says") {
  const Tensor input = from_vector<double>({2, 1, 2, NAN, 1, 2, NAN, -0.0, 0.0}, {9});
  const auto [ascending, ascending_index] = sort(input, 0, false, false);
  CHECK(ascending_index.to_vector<int64_t>() == std::vector<int64_t>{7, 8, 1, 4, 0, 2, 5, 3, 6});
  const auto [descending, descending_index] = sort(input, 0, true, true);
  CHECK(descending_index.to_vector<int64_t>() == std::vector<int64_t>{3, 6, 0, 2, 5, 1, 4, 7, 8});
  check_exactly(descending, {NAN, NAN, 2, 2, 2, 1, 1, -0.0, 0.0});
  CHECK(std::signbit(descending.to_vector<double>()[7]));  // -0.0 keeps its sign
}

TEST_CASE("sort of empty dims and 0-d inputs: empty results, and a 0-d input is its own sort at index 0") {
  for (const Dims& sizes : {Dims{0, 3}, Dims{2, 0}, Dims{0}}) {
    for (int64_t dim : {0, -1}) {
      INFO("shape " << sizes.str() << " dim " << dim);
      const auto [values, indices] = sort(zeros(sizes), dim);
      CHECK(values.sizes() == sizes);
      CHECK(indices.sizes() == sizes);
    }
  }
  const auto [value, index] = sort(scalar_tensor(2.5, {.dtype = kFloat64}), 0, true);
  CHECK(value.dim() == 0);
  CHECK(value.item() == 2.5);
  CHECK(index.dim() == 0);
  CHECK(index.item<int64_t>() == 0);
  CHECK(argsort(scalar_tensor(1.0), -1).item<int64_t>() == 0);
}

TEST_CASE("topk gives the first k of the stable sort, largest or smallest, for every k from 0 to n") {
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kInt64, kInt32}) {
    const Tensor input = tied_tensor({3, 5, 4}, 83, dtype);
    for (int64_t dim : {0, 1, -1}) {
      for (int64_t k = 0; k <= input.size(dim); ++k) {
        for (bool largest : {true, false}) {
          INFO(dtype_name(dtype) << " dim " << dim << " k " << k << " largest " << largest);
          const SortedRows expected = reference_sort(input, dim, largest, k);
          check_sorted(topk(input, k, dim, largest), expected, dtype);
          check_sorted(input.topk(k, dim, largest, false), expected, dtype);  // unsorted asked: sorted anyway
        }
      }
    }
  }
}

TEST_CASE("topk of empty and 0-d inputs: k = 0 of an empty dim, and a 0-d result for a 0-d input") {
  const auto [none, none_index] = topk(zeros({2, 0}), 0, 1);
  CHECK(none.sizes() == Dims{2, 0});
  CHECK(none_index.sizes() == Dims{2, 0});
  const auto [rows, rows_index] = topk(zeros({0, 4}), 2, 1);
  CHECK(rows.sizes() == Dims{0, 2});
  for (int64_t k : {0, 1}) {  // PyTorch keeps a 0-d shape, and its value, even for k = 0
    INFO("k " << k);
    const auto [value, index] = topk(scalar_tensor(-1.5, {.dtype = kFloat64}), k);
    CHECK(value.dim() == 0);
    CHECK(value.item() == -1.5);
    CHECK(index.item<int64_t>() == 0);
  }
}

TEST_CASE("kthvalue is the k-th smallest along dim with its index, NaN largest, keepdim or not") {
  for (DType dtype : {kFloat64, kFloat32, kInt64}) {
    const Tensor input = tied_tensor({4, 3, 5}, 84, dtype);
    for (int64_t dim : {0, 2, -2}) {
      for (int64_t k = 1; k <= input.size(dim); ++k) {
        for (bool keepdim : {false, true}) {
          INFO(dtype_name(dtype) << " dim " << dim << " k " << k << " keepdim " << keepdim);
          // Element k - 1 along dim of the first k of the ascending sort.
          const SortedRows sorted = reference_sort(input, dim, false, k);
          const Dims kept_sizes = std::get<0>(topk(input, k, dim, false)).sizes();
          const auto kth = [&](const std::vector<double>& rows) {
            return values_of(from_vector<double>(rows, kept_sizes).narrow(dim, k - 1, 1));
          };
          const auto [values, indices] = input.kthvalue(k, dim, keepdim);
          CHECK(values.sizes() == amax(input, {dim}, keepdim).sizes());
          CHECK(indices.sizes() == values.sizes());
          CHECK(values.dtype() == dtype);
          check_exactly(values, kth(sorted.values));
          check_exactly(indices, kth(sorted.indices));
        }
      }
    }
  }
  const auto [value, index] = kthvalue(scalar_tensor(4.0), 1);
  CHECK(value.item() == 4.0);
  CHECK(index.item<int64_t>() == 0);
}

TEST_CASE("kthvalue returns contiguous results, as PyTorch's fresh tensors, so view() works on them") {
  const Tensor input = arange(24, {.dtype = kFloat64}).view({2, 3, 4});
  for (int64_t dim : {1, 2}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      const auto [values, indices] = kthvalue(input, 2, dim, keepdim);
      CHECK(values.is_contiguous());
      CHECK(indices.is_contiguous());
      const Tensor flat = values.view({-1});
      check_exactly(flat, dim == 1 ? std::vector<double>{4, 5, 6, 7, 16, 17, 18, 19}
                                   : std::vector<double>{1, 5, 9, 13, 17, 21});
      check_exactly(indices.view({-1}), std::vector<double>(flat.numel(), 1.0));
    }
  }
}

TEST_CASE("max and min along a dim as Tensor methods: values and first indices, bool and NaN too") {
  const Tensor input = tied_tensor({3, 6}, 85, kFloat64);
  for (bool keepdim : {false, true}) {
    const auto [maximum, max_index] = input.max(1, keepdim);
    const auto [minimum, min_index] = input.min(1, keepdim);
    check_exactly(maximum, values_of(std::get<0>(max(input, 1, keepdim))));
    check_exactly(max_index, values_of(argmax(input, 1, keepdim)));
    check_exactly(minimum, values_of(amin(input, {1}, keepdim)));
    check_exactly(min_index, values_of(argmin(input, 1, keepdim)));
  }
  const Tensor flags = from_vector<bool>({false, true, true, false, false, false}, {2, 3});
  const auto [any_set, first_set] = flags.max(1);
  CHECK(any_set.dtype() == kBool);
  check_exactly(any_set, {1, 0});
  check_exactly(first_set, {1, 0});
  const auto [nan_min, nan_index] = from_vector<double>({1.0, -2.0, NAN, NAN}).min(0);
  CHECK(std::isnan(nan_min.item()));
  CHECK(nan_index.item<int64_t>() == 2);  // the first NaN
}

}  // namespace test_sort
